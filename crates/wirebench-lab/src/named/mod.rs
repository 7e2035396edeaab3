//! Named, persistent labs: a testbed a user (`wirebench lab up NAME ...`) or a study runner
//! creates, inspects, uses and tears down by name, which outlives the process that built
//! it.
//!
//! # Topology and addresses
//!
//! ```text
//!  plain:     wbl-<name>-c  wbc 198.18.0.1/24 ══veth══ wbs 198.18.0.2/24  wbl-<name>-s
//!  emulated:  wbl-<name>-c  wbc ══ wbmc [wbl-<name>-m: emulator process] wbms ══ wbs  wbl-<name>-s
//! ```
//!
//! * Addresses come from 198.18.0.0/15, reserved for benchmarking (RFC 2544) and never
//!   routed: client [`CLIENT_IPV4`], server [`SERVER_IPV4`], on a /24. With
//!   [`LabSpec::ipv6`] also the ULA (RFC 4193) prefix `fd77:6c62:6c00::/64`: client
//!   [`CLIENT_IPV6`], server [`SERVER_IPV6`], added `nodad` (usable at once). Without it,
//!   IPv6 is disabled in the lab's namespaces. Every lab uses the same addresses: each
//!   lab is its own isolated link, nothing is routed to or from the host.
//! * MAC addresses are fixed ([`CLIENT_MAC`], [`SERVER_MAC`]) and each endpoint has a
//!   permanent neighbour entry for the other, so no ARP/ND crosses the link (and the
//!   emulator's counters see only the traffic of the tests).
//! * Rate limit: a `tc tbf` on the client's veth egress (client→server), and with
//!   [`LabSpec::rate_both`] also on the server's. tbf counts link-layer bytes.
//! * Impairments (delay, jitter, loss, reorder, duplicate; each direction) need the
//!   emulator: the endpoints' veths then face a middle namespace where a background
//!   process (see [`run_emulator`]) forwards frames with an [`crate::emu::EmuLink`]. TSO,
//!   GSO and transmit checksum offload are switched off on the endpoints and the middle
//!   ends (see [`crate::emu`]); asking for them on is refused.
//! * Congestion control: `congctl <algo>` on the lab's routes in both endpoints (this works
//!   for any algorithm the kernel has, and loads its module if needed), and the namespace's
//!   own `net.ipv4.tcp_congestion_control` where the kernel allows it (a child namespace
//!   may only pick algorithms of `tcp_allowed_congestion_control`); the host is untouched.
//!   [`LabReport`] shows both.
//!
//! # State
//!
//! One JSON file per lab, `<state dir>/<name>.json` ([`DEFAULT_STATE_DIR`], or
//! `$WIREBENCH_LAB_DIR`), holding the spec, the phase, the creating process, an optional
//! owner process and the emulator process (PID, start time, command line). It is created
//! exclusively (two `up` of one name cannot race) and replaced atomically. Next to it the
//! emulator's status socket `<name>.sock` and log `<name>.log`.
//!
//! # Errors and read-back
//!
//! [`LabManager::up`] builds the lab with the crate's one builder (the one that builds
//! [`crate::Testbed`] and [`crate::emu::EmulatedPath`] too, with another layout of names
//! and addresses) and reads every setting back from the kernel (MTU with `ip`, offloads
//! with `ethtool -k`, qdiscs with `tc`, congestion control from the routes, sysctls from
//! the namespace's `/proc/sys`); a setting the kernel refuses or does not
//! reflect is [`NamedError::Refused`] naming the setting and the value, and everything
//! built so far is removed.

mod build;
mod emud;
pub(crate) mod readback;
mod spec;
mod state;
pub(crate) mod sys;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use thiserror::Error;

pub use emud::{query, run_emulator, EmuCountersReport, EmulatorStatus};
pub use readback::{
    EmulatorReport, EndpointReport, LabReport, MiddleReport, OffloadReadback, QdiscReport,
    RouteReport, SysctlReadback,
};
pub use spec::{
    on_off, parse_duration_ns, parse_offloads, parse_pct, parse_rate_bps, parse_sysctl,
    validate_name, Impairments, LabSpec, OffloadSetting, Sides, SysctlSetting, MAX_NAME_LEN,
};
pub use state::{EmulatorProc, LabState, Phase, ProcRef, STATE_VERSION};

use crate::LabError;

/// Default directory of the state files.
pub const DEFAULT_STATE_DIR: &str = "/run/wirebench/lab";
/// Environment variable that overrides [`DEFAULT_STATE_DIR`] (also passed to the emulator).
pub const STATE_DIR_ENV: &str = "WIREBENCH_LAB_DIR";

/// Client address (RFC 2544 benchmarking range).
pub const CLIENT_IPV4: &str = "198.18.0.1";
/// Server address.
pub const SERVER_IPV4: &str = "198.18.0.2";
/// The lab's IPv4 subnet.
pub const SUBNET_IPV4: &str = "198.18.0.0/24";
/// Client ULA address (with [`LabSpec::ipv6`]).
pub const CLIENT_IPV6: &str = "fd77:6c62:6c00::1";
/// Server ULA address.
pub const SERVER_IPV6: &str = "fd77:6c62:6c00::2";
/// The lab's IPv6 subnet.
pub const SUBNET_IPV6: &str = "fd77:6c62:6c00::/64";
/// Client interface (in `wbl-<name>-c`).
pub const IF_CLIENT: &str = "wbc";
/// Server interface (in `wbl-<name>-s`).
pub const IF_SERVER: &str = "wbs";
/// Middle interface facing the client.
pub const IF_MID_CLIENT: &str = "wbmc";
/// Middle interface facing the server.
pub const IF_MID_SERVER: &str = "wbms";
/// Client MAC address (locally administered).
pub const CLIENT_MAC: &str = "02:77:62:00:00:01";
/// Server MAC address.
pub const SERVER_MAC: &str = "02:77:62:00:00:02";

/// Namespace names of a lab.
pub mod names {
    /// Prefix of every lab namespace.
    pub const PREFIX: &str = "wbl-";

    /// `wbl-<name>-c`.
    pub fn client(name: &str) -> String {
        format!("{PREFIX}{name}-c")
    }

    /// `wbl-<name>-s`.
    pub fn server(name: &str) -> String {
        format!("{PREFIX}{name}-s")
    }

    /// `wbl-<name>-m` (only with the emulator).
    pub fn middle(name: &str) -> String {
        format!("{PREFIX}{name}-m")
    }

    /// All three, whether they exist or not.
    pub fn all(name: &str) -> Vec<String> {
        vec![client(name), server(name), middle(name)]
    }

    /// The lab a namespace name belongs to, if it is one of ours.
    pub fn lab_of(ns: &str) -> Option<&str> {
        let rest = ns.strip_prefix(PREFIX)?;
        let name = rest
            .strip_suffix("-c")
            .or_else(|| rest.strip_suffix("-s"))
            .or_else(|| rest.strip_suffix("-m"))?;
        super::validate_name(name).ok().map(|_| name)
    }
}

/// Failures of named-lab operations. Messages are one line and name the setting (as its
/// command-line flag) and the value at fault.
#[derive(Debug, Error)]
pub enum NamedError {
    /// A lab name that is not allowed.
    #[error("invalid lab name {name:?}: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A setting that is wrong before the kernel is asked.
    #[error("invalid --{setting} {value:?}: {reason}")]
    InvalidSetting {
        /// The setting (its command-line flag without dashes).
        setting: String,
        /// The value as given.
        value: String,
        /// Why.
        reason: String,
    },
    /// The kernel refused a setting, or reports something else after applying it.
    #[error("the kernel refused --{setting} {value}: {detail}")]
    Refused {
        /// The setting (its command-line flag without dashes).
        setting: String,
        /// The value asked for.
        value: String,
        /// The kernel's error or what it reports instead.
        detail: String,
    },
    /// A tool the lab needs is not installed.
    #[error("`{tool}` not found: the lab needs it (install iproute2, ethtool)")]
    MissingTool {
        /// The program.
        tool: String,
    },
    /// A lab of that name exists (possibly half-built or stale).
    #[error("lab {name:?} already exists (see `wirebench lab show {name}`, remove it with `wirebench lab down {name}`)")]
    Exists {
        /// The name.
        name: String,
    },
    /// No such lab.
    #[error("no lab named {name:?}")]
    NotFound {
        /// The name.
        name: String,
    },
    /// A command failed.
    #[error("{cmd} failed: {stderr}")]
    Command {
        /// The command line.
        cmd: String,
        /// Its stderr.
        stderr: String,
    },
    /// A system call or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// A state file or status answer that cannot be parsed.
    #[error("{path}: {detail}")]
    State {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// The emulator process failed.
    #[error("emulator of lab {name:?}: {detail}")]
    Emulator {
        /// The lab.
        name: String,
        /// What happened (with the end of its log).
        detail: String,
    },
    /// Not running as root.
    #[error("the lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")]
    NotRoot,
    /// Namespaces named like a lab's, without the lab's state file: not wirebench's to touch.
    #[error(
        "lab {name:?}: the namespaces {} have no state file in {dir}, so wirebench did not \
         create them (or lost their state); they are left alone (`ip netns delete` them if \
         they are yours)",
        namespaces.join(" ")
    )]
    Foreign {
        /// The lab name the namespaces' names point to.
        name: String,
        /// The namespaces that exist.
        namespaces: Vec<String>,
        /// The state directory.
        dir: String,
    },
    /// A state directory others could write to (planted links, forged state files).
    #[error(
        "the lab state directory {dir} {detail}; it must be owned by root and not writable \
         by group or others (set {STATE_DIR_ENV} to such a directory)"
    )]
    UnsafeStateDir {
        /// The directory.
        dir: String,
        /// What is wrong with it.
        detail: String,
    },
    /// An error of the testbed layer (emulator configuration, packet sockets).
    #[error(transparent)]
    Lab(#[from] LabError),
}

/// This process' executable as the kernel holds it (`/proc/<pid>/exe`): a child started
/// through it (directly or through `ip netns exec`) runs this very program even after the
/// file was replaced or deleted (a package upgrade mid-study), as long as this process lives.
pub fn self_exe() -> PathBuf {
    PathBuf::from(format!("/proc/{}/exe", std::process::id()))
}

/// The state directory: `$WIREBENCH_LAB_DIR`, else [`DEFAULT_STATE_DIR`].
pub fn state_dir_from_env() -> PathBuf {
    std::env::var_os(STATE_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

/// How the emulator process is started: `program args... NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmulatorCommand {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before the lab name.
    pub args: Vec<String>,
}

impl EmulatorCommand {
    /// `<this executable> lab _emulate NAME` (the `wirebench` binary).
    pub fn current_exe() -> Self {
        EmulatorCommand {
            program: self_exe(),
            args: vec!["lab".into(), "_emulate".into()],
        }
    }
}

/// One of the two endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `wbl-<name>-c`, [`CLIENT_IPV4`].
    Client,
    /// `wbl-<name>-s`, [`SERVER_IPV4`].
    Server,
}

impl Endpoint {
    /// Namespace of this endpoint in lab `name`.
    pub fn ns(self, name: &str) -> String {
        match self {
            Endpoint::Client => names::client(name),
            Endpoint::Server => names::server(name),
        }
    }

    /// Its veth interface.
    pub fn ifname(self) -> &'static str {
        match self {
            Endpoint::Client => IF_CLIENT,
            Endpoint::Server => IF_SERVER,
        }
    }

    /// Its IPv4 address.
    pub fn ipv4(self) -> &'static str {
        match self {
            Endpoint::Client => CLIENT_IPV4,
            Endpoint::Server => SERVER_IPV4,
        }
    }

    /// Its IPv6 address (configured with [`LabSpec::ipv6`]).
    pub fn ipv6(self) -> &'static str {
        match self {
            Endpoint::Client => CLIENT_IPV6,
            Endpoint::Server => SERVER_IPV6,
        }
    }

    /// `"client"` or `"server"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Client => "client",
            Endpoint::Server => "server",
        }
    }
}

/// Why a lab is stale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleLab {
    /// The lab.
    pub name: String,
    /// Human-readable reasons (e.g. `emulator pid 1234 is gone`).
    pub reasons: Vec<String>,
}

/// What [`LabManager::down`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DownReport {
    /// The lab.
    pub name: String,
    /// Namespaces deleted.
    pub namespaces: Vec<String>,
    /// PID of the emulator process that was stopped.
    pub emulator_pid: Option<u32>,
    /// Whether a state file was removed.
    pub had_state: bool,
}

/// Creates, inspects and removes named labs.
#[derive(Debug, Clone)]
pub struct LabManager {
    dir: PathBuf,
    emulator: EmulatorCommand,
}

impl Default for LabManager {
    fn default() -> Self {
        Self::new()
    }
}

impl LabManager {
    /// State in [`state_dir_from_env`]; the emulator is `<this executable> lab _emulate`.
    pub fn new() -> Self {
        LabManager {
            dir: state_dir_from_env(),
            emulator: EmulatorCommand::current_exe(),
        }
    }

    /// Use another state directory.
    pub fn with_state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }

    /// Start the emulator with another command (e.g. the `wirebench-lab-emud` binary).
    pub fn with_emulator(mut self, cmd: EmulatorCommand) -> Self {
        self.emulator = cmd;
        self
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.dir
    }

    /// Checks the state directory, if it exists: owned by root, not writable by group or
    /// others. Nothing in a directory that fails this is trusted (its state files would
    /// name processes to signal and namespaces to delete).
    pub fn check_state_dir(&self) -> Result<(), NamedError> {
        state::check_dir(&self.dir)
    }

    /// The recorded state of lab `name`, if it has a state file.
    pub fn state(&self, name: &str) -> Result<Option<LabState>, NamedError> {
        validate_name(name)?;
        self.check_state_dir()?;
        state::read(&state::Files::new(&self.dir, name).state)
    }

    /// Names of the labs wirebench owns: those with a state file (none if the state
    /// directory fails [`check_state_dir`](Self::check_state_dir)). Sorted.
    pub fn list(&self) -> Vec<String> {
        if self.check_state_dir().is_err() {
            return Vec::new();
        }
        state::names_in(&self.dir)
    }

    /// Lab names that only namespaces carry (`wbl-NAME-c` and so on without a state file):
    /// created by something else, or left after their state was lost. Never removed by
    /// wirebench. Sorted.
    pub fn foreign(&self) -> Vec<String> {
        let owned = self.list();
        let mut all: Vec<String> = sys::netns_list()
            .iter()
            .filter_map(|ns| names::lab_of(ns))
            .filter(|n| !owned.iter().any(|o| o == n))
            .map(str::to_string)
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// A `Command` that runs `program` in an endpoint's namespace (`ip netns exec`, so
    /// `/sys` shows the namespace's interfaces).
    pub fn command(
        &self,
        name: &str,
        side: Endpoint,
        program: &str,
    ) -> Result<Command, NamedError> {
        validate_name(name)?;
        let ns = side.ns(name);
        if !sys::netns_exists(&ns) {
            return Err(NamedError::NotFound {
                name: name.to_string(),
            });
        }
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns, program]);
        Ok(c)
    }

    /// Runs `argv` in an endpoint's namespace with inherited stdio and waits for it.
    pub fn exec(
        &self,
        name: &str,
        side: Endpoint,
        argv: &[String],
    ) -> Result<ExitStatus, NamedError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(NamedError::InvalidSetting {
                setting: "exec".into(),
                value: String::new(),
                reason: "no command given".into(),
            });
        };
        let mut c = self.command(name, side, program)?;
        c.args(args);
        c.status().map_err(|source| NamedError::Io {
            what: format!("running {}", sys::cmdline(&c)),
            source,
        })
    }
}

/// A lab tied to this process: recorded with this process as its owner (so it is stale if
/// the process dies without removing it) and removed on drop.
#[derive(Debug)]
pub struct OwnedLab {
    mgr: LabManager,
    name: String,
    report: LabReport,
}

impl OwnedLab {
    /// The lab's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The read-back report of `up`.
    pub fn report(&self) -> &LabReport {
        &self.report
    }

    /// The manager that built it.
    pub fn manager(&self) -> &LabManager {
        &self.mgr
    }

    /// Reads the lab back now.
    pub fn show(&self) -> Result<LabReport, NamedError> {
        self.mgr.show(&self.name)
    }

    /// Removes the lab now (also done on drop).
    pub fn down(mut self) -> Result<DownReport, NamedError> {
        let name = std::mem::take(&mut self.name);
        self.mgr.down(&name)
    }
}

impl Drop for OwnedLab {
    fn drop(&mut self) {
        if !self.name.is_empty() {
            let _ = self.mgr.down(&self.name);
        }
    }
}

/// True if this process runs as root.
pub(crate) fn is_root() -> bool {
    crate::is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_names_round_trip() {
        assert_eq!(names::client("x1"), "wbl-x1-c");
        assert_eq!(names::lab_of("wbl-x1-m"), Some("x1"));
        assert_eq!(names::lab_of("wbl-a-b-s"), Some("a-b"));
        assert_eq!(names::lab_of("wbl-x1-q"), None);
        assert_eq!(names::lab_of("wbt1x2-a"), None);
        assert_eq!(names::lab_of("wbl--c"), None);
    }
}
