//! What the daemon keeps about every test it served: one [`TestRecord`] per admitted test —
//! completed, aborted or failed, with whatever partial results exist.
//!
//! # On disk
//! With `--records FILE`, each record is one JSON line, written all or nothing: a write that
//! fails (a full disk) is rolled back to the end of the last whole line, so the file never
//! holds half a record and the next record does not glue onto a fragment; when the daemon
//! starts, a torn last line (a write cut by SIGKILL) is moved to `FILE.torn` and the file is
//! cut back to its last newline. The file is rotated to `FILE.1` before it grows past
//! `--records-max-size`. Only regular files are accepted (a FIFO would block the start). A
//! failing file is reported in the log once, when it starts failing, and once when it works
//! again; the daemon keeps serving either way.
//!
//! # In memory
//! The last records are kept in a ring bounded by bytes (their JSON size) as well as by
//! count. A record that reached the file is kept in memory without the two ends' reports
//! (they are on disk), so a peer's large report never stays resident; one that could not be
//! written is kept whole, within the same byte bound.
//!
//! # Elsewhere
//! With a [`super::RecordTap`] (`serve --db`), each record's line is also queued for a
//! consumer that saves it to the results history.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
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
    /// Server-assigned id, unique across restarts of the daemon: the daemon's start time in
    /// microseconds since the Unix epoch + a counter.
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
    /// For a test of an iperf3 client (`serve --iperf3`): its version and its own figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iperf3: Option<super::iperf3::Iperf3Info>,
    /// A third-party test this daemon ran as the client for `peer` (`identity`): the target
    /// daemon it ran against; `client` is then this daemon's report, `server` the target's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub third_party_target: Option<SocketAddr>,
}

/// The in-memory ring of records, bounded by count and by bytes.
#[derive(Debug)]
pub(super) struct Ring {
    items: VecDeque<(TestRecord, usize)>,
    bytes: usize,
    max_count: usize,
    max_bytes: usize,
}

impl Ring {
    pub(super) fn new(max_count: usize, max_bytes: usize) -> Ring {
        Ring {
            items: VecDeque::new(),
            bytes: 0,
            max_count: max_count.max(1),
            max_bytes,
        }
    }

    /// Keep `rec` (of `bytes` serialized bytes), dropping the oldest past either bound. A
    /// record larger than the whole bound is kept without its reports.
    pub(super) fn push(&mut self, mut rec: TestRecord, mut bytes: usize) {
        if bytes > self.max_bytes {
            rec.client = None;
            rec.server = None;
            bytes = serde_json::to_vec(&rec).map_or(0, |v| v.len());
        }
        while !self.items.is_empty()
            && (self.items.len() >= self.max_count || self.bytes + bytes > self.max_bytes)
        {
            if let Some((_, b)) = self.items.pop_front() {
                self.bytes -= b;
            }
        }
        self.bytes += bytes;
        self.items.push_back((rec, bytes));
    }

    /// The records, oldest first.
    pub(super) fn records(&self) -> Vec<TestRecord> {
        self.items.iter().map(|(r, _)| r.clone()).collect()
    }

    /// How many.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// Their serialized size, bytes.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Append-only JSON-lines file of test records, rotated at a size cap, written whole lines
/// only.
pub(super) struct RecordLog {
    pub(super) path: PathBuf,
    file: File,
    bytes: u64,
    max_bytes: u64,
    /// False while writes fail (so that the failure is logged once).
    healthy: bool,
}

/// Why the records file cannot be used.
fn not_regular(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} exists and is not a regular file (a FIFO, a device or a directory would block \
             or refuse the records)",
            path.display()
        ),
    )
}

/// Where the last whole line of `file` ends (0 for none), reading backwards in blocks.
fn last_newline_end(file: &mut File, len: u64) -> io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

impl RecordLog {
    /// Open (or create) the records file at `path`, repairing a torn last line.
    pub(super) fn open(path: &Path, max_bytes: u64) -> io::Result<RecordLog> {
        match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => return Err(not_regular(path)),
            Ok(_) | Err(_) => {}
        }
        let mut file = wirebench_sys::safefile::open_append(path, true)?;
        let len = file.metadata()?.len();
        let whole = last_newline_end(&mut file, len)?;
        if whole < len {
            // A line cut short (SIGKILL mid-write): keep its bytes aside, cut it off.
            let mut torn = vec![0u8; (len - whole) as usize];
            file.seek(SeekFrom::Start(whole))?;
            file.read_exact(&mut torn)?;
            let mut aside = path.as_os_str().to_owned();
            aside.push(".torn");
            let mut t = wirebench_sys::safefile::open_append(Path::new(&aside), false)?;
            t.write_all(&torn)?;
            t.write_all(b"\n")?;
            file.set_len(whole)?;
            file.sync_data()?;
            tracing::warn!(
                path = %path.display(),
                torn_bytes = torn.len(),
                "the records file ended in a torn line; moved it to {}",
                Path::new(&aside).display()
            );
        }
        Ok(RecordLog {
            path: path.to_path_buf(),
            file,
            bytes: whole,
            max_bytes,
            healthy: true,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, &old)?;
        self.file = wirebench_sys::safefile::open_append(&self.path, true)?;
        self.bytes = 0;
        Ok(())
    }

    /// Append one whole line (ending in `\n`), or nothing: a failed write is cut back.
    pub(super) fn append(&mut self, line: &[u8]) -> io::Result<()> {
        if self.bytes > 0 && self.bytes + line.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let before = self.bytes;
        let res = self
            .file
            .write_all(line)
            .and_then(|()| self.file.sync_data());
        match res {
            Ok(()) => {
                self.bytes += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Roll back to the last whole line; the record stays in memory.
                let _ = self.file.set_len(before);
                let _ = self.file.sync_data();
                Err(e)
            }
        }
    }

    /// Log a change of the file's health: once when it starts failing, once when it works
    /// again.
    fn note(&mut self, res: &io::Result<()>) {
        match (res, self.healthy) {
            (Err(e), true) => {
                tracing::error!(
                    path = %self.path.display(),
                    "cannot append test records ({e}); they are kept in memory until the \
                     file works again"
                );
                self.healthy = false;
            }
            (Ok(()), false) => {
                tracing::info!(path = %self.path.display(), "the records file works again");
                self.healthy = true;
            }
            _ => {}
        }
    }
}

/// Keep `rec`: log a line, append it to the records file, push it onto the ring.
pub(super) fn record(state: &State, mut rec: TestRecord) {
    tracing::info!(
        test_id = rec.test_id,
        peer = %rec.peer,
        status = ?rec.status,
        reason = ?rec.reason,
        "test finished"
    );
    let mut line = match serde_json::to_vec(&rec) {
        Ok(line) => line,
        Err(e) => {
            tracing::error!("cannot encode a test record: {e}");
            return;
        }
    };
    for tap in &state.cfg.record_taps {
        if !tap.offer(&line) {
            tracing::warn!(
                test_id = rec.test_id,
                dropped = tap.dropped(),
                "the queue to {} is full: this record is not handed to it (the records file \
                 and memory keep it)",
                tap.consumer()
            );
        }
    }
    let mut size = line.len();
    line.push(b'\n');
    if let Some(log) = &state.record_log {
        if let Ok(mut l) = log.lock() {
            let res = l.append(&line);
            l.note(&res);
            if res.is_ok() {
                // On disk: the reports need not stay in memory.
                rec.client = None;
                rec.server = None;
                size = serde_json::to_vec(&rec).map_or(0, |v| v.len());
            }
        }
    }
    drop(line);
    if let Ok(mut r) = state.records.lock() {
        r.push(rec, size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u64, pad: usize) -> TestRecord {
        let mut spec = TestSpec::stream_default();
        spec.common.flows = 1;
        let env = wirebench_model::side::Environment {
            software: "x".repeat(pad),
            ..Default::default()
        };
        TestRecord {
            test_id: id,
            peer: "127.0.0.1:1".parse().unwrap(),
            identity: None,
            admitted_unix_ms: 1,
            ended_unix_ms: 2,
            spec,
            status: RecordStatus::Completed,
            reason: None,
            server: Some(SideReport {
                host: wirebench_model::side::HostRole::Server,
                status: wirebench_model::side::SideStatus::Completed,
                window: None,
                data: None,
                cpu: None,
                env,
                warnings: Vec::new(),
                engine: None,
                profile: None,
                buffer_offset_bytes: None,
            }),
            client: None,
            iperf3: None,
            third_party_target: None,
        }
    }

    #[test]
    fn ring_is_bounded_by_bytes_and_count() {
        let mut r = Ring::new(3, 10_000);
        for i in 0..5 {
            r.push(rec(i, 10), 100);
        }
        assert_eq!(r.len(), 3);
        assert_eq!(r.records()[0].test_id, 2);
        let mut r = Ring::new(100, 1_000);
        for i in 0..10 {
            r.push(rec(i, 10), 300);
        }
        assert!(r.bytes() <= 1_000, "{}", r.bytes());
        assert_eq!(r.len(), 3);
        // Larger than the whole bound: kept without its reports.
        r.push(rec(99, 5_000), 5_100);
        let last = r.records().pop().unwrap();
        assert_eq!(last.test_id, 99);
        assert!(last.server.is_none());
        assert!(r.bytes() <= 1_000);
    }

    #[test]
    fn torn_tail_is_moved_aside_and_writes_are_whole_lines() {
        let dir = std::env::temp_dir().join(format!("wb-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("records.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":2}\n{\"torn\":").unwrap();
        let mut log = RecordLog::open(&path, 1 << 20).unwrap();
        log.append(b"{\"c\":3}\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
        let torn = std::fs::read_to_string(dir.join("records.jsonl.torn")).unwrap();
        assert_eq!(torn, "{\"torn\":\n");
        // A FIFO (or anything but a regular file) is refused at once.
        assert!(RecordLog::open(&dir, 1 << 20).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A state with `path` as its records file and no sockets.
    fn state_with_records(path: &Path) -> State {
        let cfg = super::super::ServerConfig::new("127.0.0.1:0".parse().unwrap());
        let log = RecordLog::open(path, 1 << 20).unwrap();
        State::new(cfg, Some(std::sync::Mutex::new(log)))
    }

    #[test]
    fn a_record_is_one_line_on_disk_and_kept_in_memory_without_its_reports() {
        let dir = std::env::temp_dir().join(format!("wb-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("records.jsonl");
        let state = state_with_records(&path);
        record(&state, rec(7, 10));
        record(&state, rec(8, 10));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(text.ends_with('\n'), "{text}");
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["test_id"], 7);
        assert_eq!(lines[1]["test_id"], 8);
        // The file has the server's report; the ring, since the file kept it, does not.
        assert!(lines[0]["server"].is_object(), "{}", lines[0]);
        let kept = state.records.lock().unwrap().records();
        assert_eq!(kept.iter().map(|r| r.test_id).collect::<Vec<_>>(), [7, 8]);
        assert!(kept.iter().all(|r| r.server.is_none()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_a_records_file_the_ring_keeps_the_reports() {
        let cfg = super::super::ServerConfig::new("127.0.0.1:0".parse().unwrap());
        let state = State::new(cfg, None);
        record(&state, rec(9, 10));
        let kept = state.records.lock().unwrap().records();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].server.is_some());
    }
}
