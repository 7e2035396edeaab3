//! `serve --db`: the daemon's records saved to the results history, on a thread of its own
//! ("wb-history") fed by the daemon's [`RecordTap`], so a slow or locked database never
//! holds up a session. Each record becomes a result as `history import` makes it
//! ([`from_record`]), with source `daemon`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use wirebench_model::text::escape;
use wirebench_net::daemon::RecordTap;
use wirebench_store::{Source, Store};

use super::cmds::from_record;
use super::save::{entry, now_ms};

/// Record bytes waiting for the database at most; past it a record is only in the records
/// file and memory (the daemon logs it).
pub const QUEUE_BYTES: usize = 64 << 20;

/// How long the saving thread waits for a record before it looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);

/// The saving thread and its queue.
pub struct DaemonHistory {
    tap: RecordTap,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl DaemonHistory {
    /// Open (creating and migrating) the database at `path` and start saving. An error
    /// names the database: a daemon asked to keep its history does not start without it.
    pub fn start(path: &Path) -> Result<DaemonHistory> {
        let store = Store::open(path)
            .with_context(|| format!("opening the history database {}", path.display()))?;
        let tap = RecordTap::new("the history database", QUEUE_BYTES);
        let done = Arc::new(AtomicBool::new(false));
        let (t, d, p) = (tap.clone(), Arc::clone(&done), path.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("wb-history".into())
            .spawn(move || save_loop(store, &t, &d, &p))
            .context("starting the history thread")?;
        Ok(DaemonHistory {
            tap,
            done,
            thread: Some(thread),
        })
    }

    /// The queue the daemon hands its records to.
    pub fn tap(&self) -> RecordTap {
        self.tap.clone()
    }

    /// Save what is queued, then stop the thread. Call after the daemon has shut down (it
    /// queues every record before its shutdown returns).
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn save_loop(mut store: Store, tap: &RecordTap, done: &AtomicBool, path: &Path) {
    loop {
        let stopping = done.load(Ordering::Acquire);
        match tap.take(if stopping { Duration::ZERO } else { POLL }) {
            Some(line) => save_line(&mut store, &line, path),
            None if stopping => return,
            None => {}
        }
    }
}

fn save_line(store: &mut Store, line: &[u8], path: &Path) {
    let text = String::from_utf8_lossy(line);
    let r = match from_record(&text) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(
                db = %path.display(),
                "a record could not be read as a result and is not saved to the history: {}",
                escape(&e)
            );
            return;
        }
    };
    match store.save(&entry(&r, &[], Source::Daemon), now_ms()) {
        Ok(id) => tracing::debug!(id, db = %path.display(), "record saved to the history"),
        Err(e) => tracing::warn!(
            db = %path.display(),
            "a record is not saved to the history database: {e} (the records file keeps it)"
        ),
    }
}
