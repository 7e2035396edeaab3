//! The state file of a named lab (`<state dir>/<name>.json`, written atomically), the
//! identity of the processes it records (PID plus start time, so a reused PID is never
//! mistaken for ours) and stopping the emulator process.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::process::{kill_process, Pid, Signal};
use serde::{Deserialize, Serialize};

use super::{LabSpec, NamedError};

/// Version of the state file layout.
pub const STATE_VERSION: u32 = 1;

/// A process, identified by its PID and its start time (`/proc/<pid>/stat` field 22, in
/// clock ticks since boot), so that a recycled PID does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcRef {
    /// Process id.
    pub pid: u32,
    /// Start time in clock ticks after boot.
    pub start_ticks: u64,
}

/// State letter and start time of a process, from `/proc/<pid>/stat`.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

impl ProcRef {
    /// The calling process.
    pub fn current() -> Option<ProcRef> {
        Self::of(std::process::id())
    }

    /// Process `pid` as it is now, if it exists.
    pub fn of(pid: u32) -> Option<ProcRef> {
        proc_stat(pid).map(|(_, start_ticks)| ProcRef { pid, start_ticks })
    }

    /// True if this very process still runs (exists, same start time, not a zombie).
    pub fn alive(&self) -> bool {
        matches!(proc_stat(self.pid), Some((s, t)) if t == self.start_ticks && s != 'Z' && s != 'X')
    }
}

/// The background emulator process of a lab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulatorProc {
    /// Its identity.
    pub proc: ProcRef,
    /// Its command line as `/proc/<pid>/cmdline` showed it once it was ready; a process is
    /// only signalled if its command line still equals this.
    pub argv: Vec<String>,
}

impl EmulatorProc {
    /// True if the recorded process runs and is still the emulator we started.
    pub fn alive(&self) -> bool {
        self.proc.alive() && cmdline(self.proc.pid).as_ref() == Some(&self.argv)
    }
}

/// `/proc/<pid>/cmdline` split at the NULs.
pub(crate) fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.is_empty() {
        return None;
    }
    Some(
        raw.split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
    )
}

/// Building or built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// `up` is still running (or died while building: then the lab is stale).
    Building,
    /// Built and verified.
    Up,
}

/// Contents of `<state dir>/<name>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabState {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// What was asked for.
    pub spec: LabSpec,
    /// Building or up.
    pub phase: Phase,
    /// The process that ran `up`.
    pub creator: Option<ProcRef>,
    /// A process the lab belongs to: when it is gone, the lab is stale. `None` for a
    /// persistent lab (`wirebench lab up`).
    pub owner: Option<ProcRef>,
    /// The emulator process, if the lab has one.
    pub emulator: Option<EmulatorProc>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
}

pub(crate) fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Paths of one lab's files.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    pub(crate) state: PathBuf,
    pub(crate) socket: PathBuf,
    pub(crate) log: PathBuf,
}

impl Files {
    pub(crate) fn new(dir: &Path, name: &str) -> Files {
        Files {
            state: dir.join(format!("{name}.json")),
            socket: dir.join(format!("{name}.sock")),
            log: dir.join(format!("{name}.log")),
        }
    }

    pub(crate) fn remove_all(&self) {
        for p in [&self.state, &self.socket, &self.log] {
            let _ = fs::remove_file(p);
        }
    }
}

fn io_err(what: String) -> impl FnOnce(io::Error) -> NamedError {
    move |source| NamedError::Io { what, source }
}

/// Checks a state directory that exists: owned by root, not writable by group or others.
pub(crate) fn check_dir(dir: &Path) -> Result<(), NamedError> {
    use std::os::unix::fs::MetadataExt;
    let m = match fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(format!("inspecting {}", dir.display()))(e)),
    };
    let unsafe_dir = |detail: String| {
        Err(NamedError::UnsafeStateDir {
            dir: dir.display().to_string(),
            detail,
        })
    };
    if !m.is_dir() {
        return unsafe_dir("is not a directory".into());
    }
    if m.uid() != 0 {
        return unsafe_dir(format!("is owned by uid {}", m.uid()));
    }
    if m.mode() & 0o022 != 0 {
        return unsafe_dir(format!("has mode {:04o}", m.mode() & 0o7777));
    }
    Ok(())
}

/// Creates the state directory (and missing parents) with mode 0700 and checks it
/// ([`check_dir`]); an existing directory keeps its mode.
pub(crate) fn ensure_dir(dir: &Path) -> Result<(), NamedError> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err(format!("creating {}", dir.display())))?;
    check_dir(dir)
}

fn to_json(state: &LabState) -> Result<Vec<u8>, NamedError> {
    let mut v = serde_json::to_vec_pretty(state).map_err(|e| NamedError::State {
        path: String::new(),
        detail: e.to_string(),
    })?;
    v.push(b'\n');
    Ok(v)
}

/// Creates the state file; fails with [`NamedError::Exists`] if it is there already (the
/// file is the lock that keeps two `up` of one name apart).
pub(crate) fn create(path: &Path, state: &LabState) -> Result<(), NamedError> {
    let mut f = match wirebench_sys::safefile::create_new(path, 0o600) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(NamedError::Exists {
                name: state.spec.name.clone(),
            })
        }
        Err(e) => return Err(io_err(format!("creating {}", path.display()))(e)),
    };
    f.write_all(&to_json(state)?)
        .map_err(io_err(format!("writing {}", path.display())))
}

/// Replaces the state file atomically (write a temporary file, then rename it over).
pub(crate) fn write(path: &Path, state: &LabState) -> Result<(), NamedError> {
    wirebench_sys::safefile::write_atomically(path, &to_json(state)?)
        .map_err(io_err(format!("writing {}", path.display())))
}

/// Reads a state file; `Ok(None)` if there is none.
pub(crate) fn read(path: &Path) -> Result<Option<LabState>, NamedError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(format!("reading {}", path.display()))(e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| NamedError::State {
            path: path.display().to_string(),
            detail: e.to_string(),
        })
}

/// Names of the labs that have a state file in `dir`.
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter_map(|f| f.strip_suffix(".json").map(str::to_string))
                .filter(|n| super::spec::validate_name(n).is_ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Emulator processes this process spawned, kept so they can be reaped (no zombies in a
/// long-running study runner or test).
static CHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

fn children() -> MutexGuard<'static, Vec<Child>> {
    CHILDREN.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn adopt(child: Child) {
    children().push(child);
}

/// Reaps `pid` if it is an exited child of ours. True if it was ours and has exited.
pub(crate) fn reap(pid: u32) -> bool {
    let mut kids = children();
    let Some(i) = kids.iter().position(|c| c.id() == pid) else {
        return false;
    };
    if matches!(kids[i].try_wait(), Ok(None)) {
        return false;
    }
    // Exited and reaped by try_wait (wait returns the recorded status at once).
    let _ = kids.swap_remove(i).wait();
    true
}

fn is_child(pid: u32) -> bool {
    children().iter().any(|c| c.id() == pid)
}

fn signal(pid: u32, sig: Signal) {
    if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(p, sig);
    }
}

/// Waits until `p` has exited (and, if it is our child, has been reaped).
fn wait_gone(p: &ProcRef, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if reap(p.pid) || (!is_child(p.pid) && !p.alive()) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Stops the emulator if it is still the process we recorded (SIGTERM, then SIGKILL after
/// a second). Returns its PID if it was signalled. Reaps it if it is our child.
pub(crate) fn stop_emulator(e: &EmulatorProc) -> Option<u32> {
    if !e.alive() {
        // A killed multi-threaded child shows as a zombie before its last thread is gone
        // and can be reaped only then: wait for that if it is ours.
        if is_child(e.proc.pid) {
            wait_gone(&e.proc, Duration::from_secs(1));
        }
        return None;
    }
    signal(e.proc.pid, Signal::TERM);
    if !wait_gone(&e.proc, Duration::from_secs(1)) {
        signal(e.proc.pid, Signal::KILL);
        wait_gone(&e.proc, Duration::from_secs(1));
    }
    Some(e.proc.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_identity() {
        let me = ProcRef::current().unwrap();
        assert!(me.alive());
        let older = ProcRef {
            start_ticks: me.start_ticks.wrapping_add(1),
            ..me
        };
        assert!(!older.alive(), "a different start time is another process");
        assert!(cmdline(me.pid).unwrap()[0].contains("wirebench_lab"));
    }

    #[test]
    fn state_round_trip_and_exclusive_create() {
        let dir = std::env::temp_dir().join(format!("wbl-state-test-{}", std::process::id()));
        ensure_dir(&dir).unwrap();
        let files = Files::new(&dir, "rt");
        let mut st = LabState {
            version: STATE_VERSION,
            spec: LabSpec::new("rt"),
            phase: Phase::Building,
            creator: ProcRef::current(),
            owner: None,
            emulator: None,
            created_unix_ms: now_unix_ms(),
        };
        create(&files.state, &st).unwrap();
        assert!(matches!(
            create(&files.state, &st),
            Err(NamedError::Exists { .. })
        ));
        st.phase = Phase::Up;
        write(&files.state, &st).unwrap();
        assert_eq!(read(&files.state).unwrap(), Some(st));
        assert_eq!(names_in(&dir), vec!["rt".to_string()]);
        files.remove_all();
        assert_eq!(read(&files.state).unwrap(), None);
        fs::remove_dir(&dir).unwrap();
    }
}
