//! The agent's side of a third-party test: this daemon runs the test as the client against
//! the target daemon (on a thread of its own, with the ticket the target issued), while the
//! control session relays its live intervals to the requesting client and, at the end, both
//! ends' reports.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::spec::TestSpec;
use wirebench_proto::data::Token;
use wirebench_proto::message::{IntervalMsg, RelayOutcome, Relayed};
use wirebench_proto::session::Timeouts;

use crate::client::{self, ClientConfig, ClientRun, Outcome};
use crate::NetError;

/// Live interval messages a third-party test holds for its requesting client at most (each
/// within the control frame cap, so the queue is bounded in bytes too).
const RELAY_QUEUE_MESSAGES: usize = 64;

/// A third-party test in progress on this daemon.
pub(super) struct Relay {
    handle: Option<JoinHandle<Result<ClientRun, NetError>>>,
    intervals: mpsc::Receiver<IntervalMsg>,
    interrupt: Arc<AtomicBool>,
    /// The target daemon.
    pub(super) target: SocketAddr,
}

impl Relay {
    /// Start the client of `spec` against `target`, presenting `ticket`. Its waits are the
    /// client's own: the connect timeout, the protocol deadlines and the peer-silence limit.
    pub(super) fn start(
        spec: TestSpec,
        target: SocketAddr,
        ticket: Token,
        timeouts: Timeouts,
    ) -> std::io::Result<Relay> {
        let mut cfg = ClientConfig::new(target, spec);
        cfg.timeouts = timeouts;
        cfg.ticket = Some(ticket);
        let interrupt = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&interrupt);
        // Bounded: the target decides how many interval messages it sends, and the requesting
        // client may read slowly. Live samples past the bound are dropped (the final reports
        // carry every interval).
        let (tx, intervals) = mpsc::sync_channel(RELAY_QUEUE_MESSAGES);
        let handle = std::thread::Builder::new()
            .name("wb-third-party".into())
            .spawn(move || {
                client::run(&cfg, &flag, &mut |m: &IntervalMsg| {
                    let _ = tx.try_send(m.clone());
                })
            })?;
        Ok(Relay {
            handle: Some(handle),
            intervals,
            interrupt,
            target,
        })
    }

    /// Stop the test (the requesting client aborted, or this daemon shuts down); its partial
    /// figures still come back through [`Relay::try_finish`].
    pub(super) fn stop(&self) {
        self.interrupt.store(true, Ordering::Relaxed);
    }

    /// The live samples that arrived since the last call.
    pub(super) fn intervals(&self) -> Vec<IntervalMsg> {
        self.intervals.try_iter().collect()
    }

    /// How the test ended, once the client has finished.
    pub(super) fn try_finish(&mut self) -> Option<Relayed> {
        if !self.handle.as_ref()?.is_finished() {
            return None;
        }
        let joined = self.handle.take()?.join();
        Some(relayed(joined.unwrap_or_else(|_| {
            Err(NetError::Io {
                context: "running the third-party client",
                source: std::io::Error::other("the client thread panicked"),
            })
        })))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop();
        if let Some(h) = self.handle.take() {
            // Bounded by the client's own deadlines.
            let _ = h.join();
        }
    }
}

/// The account the requesting client gets of the agent's run.
fn relayed(run: Result<ClientRun, NetError>) -> Relayed {
    match run {
        Ok(run) => Relayed {
            outcome: match run.outcome {
                Outcome::Completed => RelayOutcome::Completed,
                Outcome::Interrupted => RelayOutcome::Interrupted,
                Outcome::Aborted(reason) => RelayOutcome::Aborted { reason },
            },
            client: run.client,
            server: run.server,
        },
        Err(e) => {
            let mut error = e.to_error_info();
            if matches!(e, NetError::Interrupted) {
                error = ErrorInfo::new(
                    ErrorKind::Interrupted,
                    "the third-party test was stopped before it started",
                );
            }
            Relayed {
                outcome: RelayOutcome::Failed { error },
                client: None,
                server: None,
            }
        }
    }
}
