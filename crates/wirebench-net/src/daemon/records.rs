//! What the daemon keeps about every test it served: one [`TestRecord`] per admitted test —
//! completed, aborted or failed, with whatever partial results exist — in a bounded
//! in-memory ring and, if configured, appended to a JSON-lines file rotated at a size cap.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Serialize;
use wirebench_model::abort::AbortReason;
use wirebench_model::side::SideReport;
use wirebench_model::spec::TestSpec;

use super::State;

/// How an admitted test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordStatus {
    /// Both ends ran to the end and exchanged results.
    Completed,
    /// The test was stopped early (client interrupt, server limit or shutdown); partial
    /// results are kept.
    Aborted,
    /// The session failed (timeout, lost peer, protocol error).
    Failed,
}

/// What the daemon remembers about a test it served.
#[derive(Debug, Clone, Serialize)]
pub struct TestRecord {
    /// Server-assigned id.
    pub test_id: u64,
    /// Client address of the control connection.
    pub peer: SocketAddr,
    /// The identity the client authenticated as, if the daemon requires authentication.
    pub identity: Option<String>,
    /// Unix time the test was admitted, milliseconds.
    pub admitted_unix_ms: u64,
    /// Unix time the record was written, milliseconds.
    pub ended_unix_ms: u64,
    /// The spec.
    pub spec: TestSpec,
    /// How it ended.
    pub status: RecordStatus,
    /// Why it did not complete, if it did not.
    pub reason: Option<AbortReason>,
    /// What the server measured (partial if aborted).
    pub server: Option<SideReport>,
    /// What the client reported, if it got that far.
    pub client: Option<SideReport>,
}

/// Append-only JSON-lines file of test records, rotated at a size cap.
pub(super) struct RecordLog {
    pub(super) path: PathBuf,
    file: File,
    bytes: u64,
    max_bytes: u64,
}

impl RecordLog {
    pub(super) fn open(path: &Path, max_bytes: u64) -> io::Result<RecordLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let bytes = file.metadata()?.len();
        Ok(RecordLog {
            path: path.to_path_buf(),
            file,
            bytes,
            max_bytes,
        })
    }

    pub(super) fn append(&mut self, line: &[u8]) -> io::Result<()> {
        if self.bytes > 0 && self.bytes + line.len() as u64 > self.max_bytes {
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            std::fs::rename(&self.path, &old)?;
            self.file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            self.bytes = 0;
        }
        self.file.write_all(line)?;
        self.file.sync_data()?;
        self.bytes += line.len() as u64;
        Ok(())
    }
}

/// Keep `rec`: log a line, append it to the records file, push it onto the ring.
pub(super) fn record(state: &State, rec: TestRecord) {
    tracing::info!(
        test_id = rec.test_id,
        peer = %rec.peer,
        status = ?rec.status,
        reason = ?rec.reason,
        "test finished"
    );
    if let Some(log) = &state.record_log {
        match serde_json::to_vec(&rec) {
            Ok(mut line) => {
                line.push(b'\n');
                if let Ok(mut l) = log.lock() {
                    if let Err(e) = l.append(&line) {
                        tracing::error!(path = %l.path.display(), "cannot append a test record: {e}");
                    }
                }
            }
            Err(e) => tracing::error!("cannot encode a test record: {e}"),
        }
    }
    if let Ok(mut r) = state.records.lock() {
        while r.len() >= state.cfg.record_capacity.max(1) {
            r.pop_front();
        }
        r.push_back(rec);
    }
}

