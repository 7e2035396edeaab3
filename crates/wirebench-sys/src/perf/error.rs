//! The typed errors of the sampler and the privilege facts they carry.

use std::fmt;

/// The event a sampler counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The software `cpu-clock` event (an hrtimer per CPU); its period is in ns.
    CpuClock,
    /// The hardware `cycles` event (needs a PMU); its period is in cycles.
    Cycles,
}

impl EventKind {
    /// perf's name for the event.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::CpuClock => "cpu-clock",
            EventKind::Cycles => "cycles",
        }
    }
}

/// Why the sampler could not be set up or run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfError {
    /// `perf_event_open` refused a system-wide event on a CPU (`EACCES`/`EPERM`): it needs
    /// root, `CAP_PERFMON` (or `CAP_SYS_ADMIN`), or `kernel.perf_event_paranoid` <= 0.
    Permission {
        /// The CPU whose event was refused.
        cpu: u32,
        /// `/proc/sys/kernel/perf_event_paranoid`, if readable.
        paranoid: Option<i32>,
        /// Whether this process holds `CAP_PERFMON` (effective set).
        cap_perfmon: bool,
        /// Whether this process holds `CAP_SYS_ADMIN` (effective set).
        cap_sys_admin: bool,
    },
    /// The kernel has no such event here (`ENOENT`, `EOPNOTSUPP`, `ENODEV` on the event):
    /// e.g. `cycles` in a VM without a virtual PMU.
    UnsupportedEvent {
        /// The event asked for.
        event: EventKind,
        /// The errno.
        errno: i32,
    },
    /// The frequency is above `kernel.perf_event_max_sample_rate`.
    FrequencyTooHigh {
        /// The frequency asked for, Hz.
        freq_hz: u32,
        /// The limit, Hz, if readable.
        max_hz: Option<u32>,
    },
    /// No CPU was given, or the frequency is zero.
    InvalidConfig,
    /// A CPU in the list is not online (`ENODEV`/`EINVAL` on the CPU).
    NoSuchCpu {
        /// The CPU.
        cpu: u32,
    },
    /// The process or the system is out of file descriptors (`EMFILE`/`ENFILE`).
    TooManyFiles {
        /// The errno.
        errno: i32,
    },
    /// The ring buffer could not be mapped (`EPERM` past `perf_event_mlock_kb`, `ENOMEM`).
    Mmap {
        /// The errno.
        errno: i32,
        /// Data pages asked for per CPU.
        data_pages: usize,
    },
    /// An `ioctl` (enable/disable) failed.
    Ioctl {
        /// The errno.
        errno: i32,
    },
    /// Any other `perf_event_open` failure.
    Open {
        /// The errno.
        errno: i32,
    },
    /// The drain thread could not be started or panicked.
    DrainThread,
}

impl fmt::Display for PerfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let os = |e: &i32| std::io::Error::from_raw_os_error(*e);
        match self {
            PerfError::Permission {
                cpu,
                paranoid,
                cap_perfmon,
                cap_sys_admin,
            } => {
                write!(f, "not permitted to sample CPU {cpu} system-wide (")?;
                match paranoid {
                    Some(p) => write!(f, "kernel.perf_event_paranoid = {p}")?,
                    None => write!(f, "kernel.perf_event_paranoid unreadable")?,
                }
                write!(
                    f,
                    ", CAP_PERFMON {}, CAP_SYS_ADMIN {}; needs root, CAP_PERFMON or paranoid <= 0)",
                    held(*cap_perfmon),
                    held(*cap_sys_admin)
                )
            }
            PerfError::UnsupportedEvent { event, errno } => {
                write!(
                    f,
                    "event {} not supported here: {}",
                    event.name(),
                    os(errno)
                )
            }
            PerfError::FrequencyTooHigh { freq_hz, max_hz } => match max_hz {
                Some(m) => write!(
                    f,
                    "{freq_hz} Hz is above perf_event_max_sample_rate ({m} Hz)"
                ),
                None => write!(f, "{freq_hz} Hz is above perf_event_max_sample_rate"),
            },
            PerfError::InvalidConfig => write!(f, "no CPU to sample, or a zero frequency"),
            PerfError::NoSuchCpu { cpu } => write!(f, "CPU {cpu} is not online"),
            PerfError::TooManyFiles { errno } => {
                write!(f, "out of file descriptors: {}", os(errno))
            }
            PerfError::Mmap { errno, data_pages } => write!(
                f,
                "cannot map a {data_pages}-page ring buffer: {} (see kernel.perf_event_mlock_kb)",
                os(errno)
            ),
            PerfError::Ioctl { errno } => write!(f, "perf ioctl failed: {}", os(errno)),
            PerfError::Open { errno } => write!(f, "perf_event_open failed: {}", os(errno)),
            PerfError::DrainThread => write!(f, "the sampler's drain thread failed"),
        }
    }
}

impl std::error::Error for PerfError {}

fn held(b: bool) -> &'static str {
    if b {
        "held"
    } else {
        "not held"
    }
}

/// `CAP_SYS_ADMIN`'s bit in the capability sets.
const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON`'s bit in the capability sets.
const CAP_PERFMON: u32 = 38;

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/proc/sys/kernel/perf_event_max_sample_rate`, Hz, if readable.
pub fn max_sample_rate_hz() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The effective capability set (`CapEff` of `/proc/self/status`), if readable.
pub fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_cap_eff(&status)
}

/// Parses `CapEff:\t<hex>` out of a `/proc/<pid>/status` text.
fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// The facts of a permission refusal on `cpu`.
pub(crate) fn permission_error(cpu: u32) -> PerfError {
    let caps = effective_capabilities().unwrap_or(0);
    PerfError::Permission {
        cpu,
        paranoid: paranoid_level(),
        cap_perfmon: caps & (1 << CAP_PERFMON) != 0,
        cap_sys_admin: caps & (1 << CAP_SYS_ADMIN) != 0,
    }
}

/// True if this process may open system-wide per-CPU events: paranoid <= 0, or
/// `CAP_PERFMON` / `CAP_SYS_ADMIN` held. (A hint for callers; the kernel decides.)
pub fn system_wide_permitted() -> bool {
    let caps = effective_capabilities().unwrap_or(0);
    paranoid_level().is_some_and(|p| p <= 0)
        || caps & (1 << CAP_PERFMON) != 0
        || caps & (1 << CAP_SYS_ADMIN) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_eff_is_parsed() {
        let s = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        let caps = parse_cap_eff(s).unwrap();
        assert!(caps & (1 << CAP_PERFMON) != 0 && caps & (1 << CAP_SYS_ADMIN) != 0);
        assert_eq!(parse_cap_eff("CapEff:\t0000000000200000\n"), Some(1 << 21));
        assert_eq!(parse_cap_eff("Name: x\n"), None);
    }

    #[test]
    fn permission_message_names_the_facts() {
        let e = PerfError::Permission {
            cpu: 1,
            paranoid: Some(2),
            cap_perfmon: false,
            cap_sys_admin: false,
        };
        let m = e.to_string();
        assert!(
            m.contains("paranoid = 2") && m.contains("CAP_PERFMON not held"),
            "{m}"
        );
    }
}
