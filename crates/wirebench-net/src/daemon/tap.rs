//! A bounded hand-off of finished test records to a consumer outside the daemon: `serve
//! --db` saves each record to the results history on a thread of its own, so a slow or
//! locked database never holds up a session.
//!
//! The queue is bounded by bytes (the records' JSON size), not only by count: a record that
//! does not fit is not queued and is counted as dropped ([`RecordTap::dropped`]); the
//! records file and the in-memory ring still hold it. A record larger than the whole bound
//! is never queued.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The consumer's side and the daemon's side of one queue of record lines (JSON, without
/// the newline). Clones share the queue.
#[derive(Debug, Clone)]
pub struct RecordTap {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    queue: Mutex<Queue>,
    ready: Condvar,
    max_bytes: usize,
    dropped: AtomicU64,
    consumer: &'static str,
}

#[derive(Debug, Default)]
struct Queue {
    lines: VecDeque<Vec<u8>>,
    bytes: usize,
}

impl RecordTap {
    /// A queue holding at most `max_bytes` of record lines at once, for `consumer` (what
    /// the daemon's log names when a record does not fit: "the history database").
    pub fn new(consumer: &'static str, max_bytes: usize) -> RecordTap {
        RecordTap {
            inner: Arc::new(Inner {
                queue: Mutex::new(Queue::default()),
                ready: Condvar::new(),
                max_bytes,
                dropped: AtomicU64::new(0),
                consumer,
            }),
        }
    }

    /// Who takes the records.
    pub fn consumer(&self) -> &'static str {
        self.inner.consumer
    }

    /// Queue a copy of `line` if it fits within the byte bound; false (and counted as
    /// dropped) if it does not.
    pub fn offer(&self, line: &[u8]) -> bool {
        let Ok(mut q) = self.inner.queue.lock() else {
            return false;
        };
        if q.bytes.saturating_add(line.len()) > self.inner.max_bytes {
            drop(q);
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        q.bytes += line.len();
        q.lines.push_back(line.to_vec());
        drop(q);
        self.inner.ready.notify_one();
        true
    }

    /// The oldest queued line, waiting up to `wait` for one.
    pub fn take(&self, wait: Duration) -> Option<Vec<u8>> {
        let q = self.inner.queue.lock().ok()?;
        let (mut q, _) = self
            .inner
            .ready
            .wait_timeout_while(q, wait, |q| q.lines.is_empty())
            .ok()?;
        let line = q.lines.pop_front()?;
        q.bytes -= line.len();
        Some(line)
    }

    /// Records refused because the queue was full (by bytes).
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Bytes queued now.
    pub fn queued_bytes(&self) -> usize {
        self.inner.queue.lock().map_or(0, |q| q.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_by_bytes_in_order_and_counts_what_it_drops() {
        let tap = RecordTap::new("test", 10);
        assert!(tap.offer(b"abcd"));
        assert!(tap.offer(b"efgh"));
        // 8 queued: 3 more bytes would pass the bound of 10.
        assert!(!tap.offer(b"ijk"));
        assert!(tap.offer(b"ij"));
        assert_eq!(tap.queued_bytes(), 10);
        assert_eq!(tap.dropped(), 1);
        // A line larger than the whole bound never fits.
        assert!(!RecordTap::new("test", 3).offer(b"abcd"));
        assert_eq!(tap.take(Duration::ZERO).as_deref(), Some(&b"abcd"[..]));
        assert_eq!(tap.queued_bytes(), 6);
        assert!(tap.offer(b"kl"));
        let rest: Vec<Vec<u8>> = std::iter::from_fn(|| tap.take(Duration::ZERO)).collect();
        assert_eq!(rest, vec![b"efgh".to_vec(), b"ij".to_vec(), b"kl".to_vec()]);
        assert_eq!(tap.queued_bytes(), 0);
    }

    #[test]
    fn take_waits_for_a_line_from_another_thread() {
        let tap = RecordTap::new("test", 1 << 20);
        let t2 = tap.clone();
        let h = std::thread::spawn(move || t2.take(Duration::from_secs(30)));
        assert!(tap.offer(b"line"));
        assert_eq!(h.join().unwrap().as_deref(), Some(&b"line"[..]));
        // Nothing queued: an empty wait returns None at its end.
        assert_eq!(tap.take(Duration::from_millis(1)), None);
    }
}
