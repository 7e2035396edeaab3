//! A client run whose `--json-stream` output a reader thread collects as it comes, so that a
//! test can wait for the run to reach a point (the n-th interval of one end) instead of
//! sleeping for a guessed time.

use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Guarded;
use wirebench_model::result::RunResult;

/// Interval events seen so far, per end: (client, server).
type Counts = Arc<(Mutex<(u32, u32)>, Condvar)>;

/// A running `--json-stream` client.
pub struct Streamed {
    child: Guarded,
    counts: Counts,
    reader: JoinHandle<Vec<String>>,
}

/// What a streamed run ended with.
pub struct StreamedEnd {
    /// The process's exit status.
    pub status: ExitStatus,
    /// Every stdout line, in order.
    pub lines: Vec<String>,
    /// The last line's result (`{"event":"result","result":…}`), as JSON.
    pub result_json: serde_json::Value,
}

impl StreamedEnd {
    /// The result, typed.
    pub fn result(&self) -> RunResult {
        serde_json::from_value(self.result_json.clone()).expect("a RunResult")
    }
}

impl Streamed {
    /// Spawn `c` (which must ask for `--json-stream` and an interval) with its stdout piped.
    pub fn spawn(c: &mut Command) -> Streamed {
        c.stdout(Stdio::piped());
        let mut child = Guarded::spawn(c);
        let out = child.child().stdout.take().expect("piped stdout");
        let counts: Counts = Arc::new((Mutex::new((0, 0)), Condvar::new()));
        let seen = counts.clone();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut lines = Vec::new();
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if line.contains(r#""event":"interval""#) {
                    let mut c = seen.0.lock().unwrap();
                    if line.contains(r#""host":"server""#) {
                        c.1 += 1;
                    } else {
                        c.0 += 1;
                    }
                    seen.1.notify_all();
                }
                lines.push(line);
            }
            lines
        });
        Streamed {
            child,
            counts,
            reader,
        }
    }

    /// The client's PID.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Wait until `n` interval events of the end `host` ("client" or "server") have been
    /// printed; false if `within` passed first.
    pub fn wait_intervals(&self, host: &str, n: u32, within: Duration) -> bool {
        let end = Instant::now() + within;
        let (lock, cv) = &*self.counts;
        let mut c = lock.lock().unwrap();
        loop {
            let got = if host == "server" { c.1 } else { c.0 };
            if got >= n {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            c = cv.wait_timeout(c, end - now).unwrap().0;
        }
    }

    /// Wait for the process to exit; its lines and its result.
    ///
    /// # Panics
    ///
    /// If the last line is not a result event.
    pub fn wait(mut self) -> StreamedEnd {
        let status = self.child.wait();
        let lines = self.reader.join().expect("the reader");
        let last: serde_json::Value = lines
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no JSON last line: {lines:?}"));
        assert_eq!(last["event"], "result", "{last}");
        StreamedEnd {
            status,
            result_json: last["result"].clone(),
            lines,
        }
    }
}
