//! `struct perf_event_attr` (the `PERF_ATTR_SIZE_VER5` layout, 112 bytes) and
//! `perf_event_open(2)` for one system-wide sampling event on one CPU.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use super::error::{max_sample_rate_hz, permission_error, EventKind, PerfError};

/// `PERF_TYPE_HARDWARE`.
const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_HW_CPU_CYCLES`.
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// `PERF_COUNT_SW_CPU_CLOCK`.
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;

/// `PERF_SAMPLE_IP`.
const PERF_SAMPLE_IP: u64 = 1 << 0;
/// `PERF_SAMPLE_TID`.
const PERF_SAMPLE_TID: u64 = 1 << 1;
/// `PERF_SAMPLE_TIME`.
const PERF_SAMPLE_TIME: u64 = 1 << 2;
/// `PERF_SAMPLE_CALLCHAIN`.
const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
/// `PERF_SAMPLE_CPU`.
const PERF_SAMPLE_CPU: u64 = 1 << 7;
/// `PERF_SAMPLE_PERIOD`.
const PERF_SAMPLE_PERIOD: u64 = 1 << 8;

/// The sample type every event of this sampler is opened with; the record parser
/// (`record::parse`) reads exactly this layout.
pub(crate) const SAMPLE_TYPE: u64 = PERF_SAMPLE_IP
    | PERF_SAMPLE_TID
    | PERF_SAMPLE_TIME
    | PERF_SAMPLE_CPU
    | PERF_SAMPLE_PERIOD
    | PERF_SAMPLE_CALLCHAIN;

/// Flag bits of the attr's bitfield word.
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_FREQ: u64 = 1 << 10;
const FLAG_WATERMARK: u64 = 1 << 14;
const FLAG_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
const FLAG_USE_CLOCKID: u64 = 1 << 25;

/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `PERF_ATTR_SIZE_VER5`.
const ATTR_SIZE_VER5: u32 = 112;

/// `struct perf_event_attr` up to `sample_max_stack` (`PERF_ATTR_SIZE_VER5`). Unions are
/// represented by the member this sampler uses.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    /// `sample_period` / `sample_freq` (with `FLAG_FREQ`).
    sample_freq: u64,
    sample_type: u64,
    read_format: u64,
    /// The bitfield word (`disabled`, `inherit`, ... `freq` ... `use_clockid` ...).
    flags: u64,
    /// `wakeup_events` / `wakeup_watermark` (bytes, with `FLAG_WATERMARK`).
    wakeup_watermark: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == ATTR_SIZE_VER5 as usize);

/// What to open on one CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenParams {
    pub event: EventKind,
    pub cpu: u32,
    pub freq_hz: u32,
    pub max_stack: u16,
    pub wakeup_bytes: u32,
    pub user_callchain: bool,
}

/// Opens one disabled, system-wide sampling event on `p.cpu` (pid = -1): kernel and user
/// samples and call chains, idle included, time stamps on `CLOCK_MONOTONIC`.
pub(crate) fn open_event(p: &OpenParams) -> Result<OwnedFd, PerfError> {
    let (kind, config) = match p.event {
        EventKind::CpuClock => (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK),
        EventKind::Cycles => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    };
    let attr = PerfEventAttr {
        kind,
        size: ATTR_SIZE_VER5,
        config,
        sample_freq: u64::from(p.freq_hz),
        sample_type: SAMPLE_TYPE,
        // Nothing excluded: user, kernel, hypervisor and idle all sampled.
        flags: FLAG_DISABLED
            | FLAG_FREQ
            | FLAG_WATERMARK
            | FLAG_USE_CLOCKID
            | if p.user_callchain {
                0
            } else {
                FLAG_EXCLUDE_CALLCHAIN_USER
            },
        wakeup_watermark: p.wakeup_bytes,
        clockid: libc::CLOCK_MONOTONIC,
        sample_max_stack: p.max_stack,
        ..PerfEventAttr::default()
    };
    // SAFETY: `attr` is a fully initialised perf_event_attr whose `size` field matches its
    // layout; the kernel only reads it (and may write `size` back on E2BIG, which this live
    // local allows). pid -1 with a CPU number is a per-CPU system-wide event; group_fd -1.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            std::ptr::addr_of!(attr),
            -1 as libc::pid_t,
            p.cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if rc < 0 {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(classify_open_errno(errno, p));
    }
    let fd = rc as libc::c_int;
    // SAFETY: the syscall returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Turns a `perf_event_open` errno into the typed error.
fn classify_open_errno(errno: i32, p: &OpenParams) -> PerfError {
    match errno {
        libc::EACCES | libc::EPERM => permission_error(p.cpu),
        libc::EMFILE | libc::ENFILE => PerfError::TooManyFiles { errno },
        libc::ENOENT | libc::EOPNOTSUPP => PerfError::UnsupportedEvent {
            event: p.event,
            errno,
        },
        libc::ENODEV => {
            if cpu_online(p.cpu) {
                PerfError::UnsupportedEvent {
                    event: p.event,
                    errno,
                }
            } else {
                PerfError::NoSuchCpu { cpu: p.cpu }
            }
        }
        libc::EINVAL => {
            let max_hz = max_sample_rate_hz();
            if max_hz.is_some_and(|m| p.freq_hz > m) {
                PerfError::FrequencyTooHigh {
                    freq_hz: p.freq_hz,
                    max_hz,
                }
            } else if !cpu_online(p.cpu) {
                PerfError::NoSuchCpu { cpu: p.cpu }
            } else {
                PerfError::Open { errno }
            }
        }
        _ => PerfError::Open { errno },
    }
}

/// True if `/sys/devices/system/cpu/online` lists `cpu` (true if unreadable: let the
/// kernel's error stand).
fn cpu_online(cpu: u32) -> bool {
    match std::fs::read_to_string("/sys/devices/system/cpu/online") {
        Ok(s) => parse_cpu_list(s.trim()).is_some_and(|l| l.contains(&cpu)),
        Err(_) => true,
    }
}

/// Parses a kernel CPU list (`0-3,5,7-8`).
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// The online CPUs (`/sys/devices/system/cpu/online`), ascending.
///
/// # Errors
///
/// The read error, or `InvalidData` if the list cannot be parsed.
pub fn online_cpu_list() -> io::Result<Vec<u32>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(s.trim()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse CPU list {s:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5,7-8"), Some(vec![0, 1, 2, 3, 5, 7, 8]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }
}
