//! The emulator process of a named lab: a background process (started by
//! [`super::LabManager::up`], detached in its own session) that runs an [`EmuLink`] in the
//! lab's middle namespace until it is killed, and answers status queries (configuration
//! and counters) on a Unix socket `<state dir>/<name>.sock`: connect, read one JSON
//! [`EmulatorStatus`], EOF.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::state::{self, Files};
use super::{names, state_dir_from_env, Impairments, NamedError, IF_MID_CLIENT, IF_MID_SERVER};
use crate::emu::{Direction, EmuCounters, EmuLink};

/// Counters of one direction of the emulator, as the status socket reports them (the
/// emulator's own [`EmuCounters`]).
pub type EmuCountersReport = EmuCounters;

/// What the emulator process reports about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmulatorStatus {
    /// Its PID.
    pub pid: u32,
    /// The impairments in force (each direction).
    pub impair: Impairments,
    /// Client → server counters.
    pub client_to_server: EmuCountersReport,
    /// Server → client counters.
    pub server_to_client: EmuCountersReport,
    /// A forwarder failure, if one stopped.
    pub failure: Option<String>,
}

/// Asks the emulator behind `socket` for its status.
pub fn query(socket: &Path, timeout: Duration) -> Result<EmulatorStatus, NamedError> {
    let what = || format!("querying the emulator at {}", socket.display());
    let io = |source| NamedError::Io {
        what: what(),
        source,
    };
    let mut s = UnixStream::connect(socket).map_err(io)?;
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).map_err(io)?;
    serde_json::from_str(&buf).map_err(|e| NamedError::State {
        path: socket.display().to_string(),
        detail: format!("bad emulator status: {e}"),
    })
}

fn status(link: &EmuLink, impair: &Impairments) -> EmulatorStatus {
    EmulatorStatus {
        pid: std::process::id(),
        impair: impair.clone(),
        client_to_server: link.counters(Direction::AToB),
        server_to_client: link.counters(Direction::BToA),
        failure: link.check().err().map(|e| e.to_string()),
    }
}

/// Body of the emulator process for lab `name` (`wirebench lab _emulate NAME`, or the
/// `wirebench-lab-emud NAME` binary): leaves the caller's session, reads the lab's state
/// file (in `$WIREBENCH_LAB_DIR`, default [`super::DEFAULT_STATE_DIR`]), starts the
/// forwarders in namespace `wbl-<name>-m` and serves status queries. Runs until killed;
/// returns only on an error (a forwarder that fails ends the process, which makes the lab
/// stale).
pub fn run_emulator(name: &str) -> Result<(), NamedError> {
    // Own session: no terminal signals (SIGINT/SIGHUP of the shell that ran `lab up`).
    // Fails only if we already lead a process group, which changes nothing here.
    let _ = rustix::process::setsid();
    super::spec::validate_name(name)?;
    let dir = state_dir_from_env();
    let files = Files::new(&dir, name);
    let st = state::read(&files.state)?.ok_or_else(|| NamedError::NotFound {
        name: name.to_string(),
    })?;
    let impair = st.spec.impair.clone();
    let cfg = impair.emu_config();
    let ns = names::middle(name);
    let link = Arc::new(EmuLink::attach(
        &ns,
        IF_MID_CLIENT,
        IF_MID_SERVER,
        cfg.clone(),
        cfg,
    )?);
    let _ = std::fs::remove_file(&files.socket);
    let listener = UnixListener::bind(&files.socket).map_err(|source| NamedError::Io {
        what: format!("binding {}", files.socket.display()),
        source,
    })?;
    eprintln!(
        "wirebench lab {name}: emulator pid {} forwarding in {ns} ({:?})",
        std::process::id(),
        impair
    );
    let served = Arc::clone(&link);
    std::thread::Builder::new()
        .name("wb-emu-status".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
                if let Ok(text) = serde_json::to_string(&status(&served, &impair)) {
                    let _ = conn.write_all(text.as_bytes());
                }
            }
        })
        .map_err(|source| NamedError::Io {
            what: "spawning the status thread".into(),
            source,
        })?;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if let Err(e) = link.check() {
            eprintln!("wirebench lab {name}: emulator stops: {e}");
            return Err(NamedError::Emulator {
                name: name.to_string(),
                detail: e.to_string(),
            });
        }
    }
}
