//! What one request/response end runs: the [`RrConfig`] every workload and role shares, and
//! the flows of one end ([`RrFlows`]), whose variant names the workload and the role and
//! carries the parameters only that workload and role use — so no field is ignored by any of
//! them.

use std::io as stdio;
use std::net::{TcpStream, UdpSocket};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use wirebench_model::rr::RrRole;
use wirebench_model::spec::CloseMode;

use crate::Timing;

/// A CRR transaction's longest wait on the peer unless the end says otherwise.
pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(1);

/// A UDP RR client's wait for a response unless the end says otherwise.
pub const DEFAULT_UDP_TIMEOUT: Duration = Duration::from_millis(100);

/// Parameters every request/response run shares at one end, whatever the workload and role
/// (built from a validated spec).
#[derive(Debug, Clone, PartialEq)]
pub struct RrConfig {
    /// Warm-up, duration, intervals, drain, pinning, policy and buffer placement.
    pub timing: Timing,
    /// Bytes per request.
    pub request_size_bytes: usize,
    /// Bytes per response.
    pub response_size_bytes: usize,
}

impl Default for RrConfig {
    /// [`Timing::default`], 1-byte request and response.
    fn default() -> Self {
        RrConfig {
            timing: Timing::default(),
            request_size_bytes: 1,
            response_size_bytes: 1,
        }
    }
}

/// Open-loop (fixed-rate) parameters of a TCP RR client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenLoop {
    /// Requests scheduled per second, **per flow**.
    pub per_s: u64,
    /// Most requests outstanding (sent, not yet answered) per flow; at the cap the sender
    /// waits and the schedule keeps running (see the module docs).
    pub max_outstanding: u32,
}

/// How a TCP RR client sends its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// Closed loop: `burst` transactions in flight per flow (netperf `-b`); 1 = one at a
    /// time.
    Closed {
        /// Transactions in flight per flow.
        burst: u32,
    },
    /// Open loop: requests leave on a fixed schedule (see the module docs).
    Open(OpenLoop),
}

impl Default for Pacing {
    /// Closed loop, one transaction at a time.
    fn default() -> Self {
        Pacing::Closed { burst: 1 }
    }
}

/// One connected TCP RR data connection (options other than TCP_NODELAY already applied;
/// the engine sets TCP_NODELAY and its own socket timeouts).
#[derive(Debug)]
pub struct TcpRrFlow {
    /// Flow id.
    pub flow: u32,
    /// The connected socket.
    pub stream: TcpStream,
}

/// Opens one CRR connection, ready for the request (the daemon writes its data hello inside).
/// It must bound its own waits (e.g. `TcpStream::connect_timeout`).
pub type ConnectFn = Box<dyn FnMut() -> stdio::Result<TcpStream> + Send>;

/// One CRR client flow.
pub struct CrrClientFlow {
    /// Flow id.
    pub flow: u32,
    /// Called once per transaction.
    pub connect: ConnectFn,
}

impl std::fmt::Debug for CrrClientFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrrClientFlow")
            .field("flow", &self.flow)
            .finish_non_exhaustive()
    }
}

/// One CRR server flow: the connections accepted for it, in order. The flow ends when every
/// sender of the channel is dropped (or, after the stop instant, when idle — see the module
/// docs).
#[derive(Debug)]
pub struct CrrServerFlow {
    /// Flow id.
    pub flow: u32,
    /// Newly accepted connections (hello already consumed).
    pub accepted: Receiver<TcpStream>,
}

/// One UDP RR flow: on a client a **connected** socket (`UdpSocket::connect` to the server),
/// on a server a socket connected to its client.
#[derive(Debug)]
pub struct UdpRrFlow {
    /// Flow id.
    pub flow: u32,
    /// The socket.
    pub socket: UdpSocket,
}

/// A TCP RR client end.
#[derive(Debug, Default)]
pub struct TcpRrClient {
    /// The flows.
    pub flows: Vec<TcpRrFlow>,
    /// Closed or open loop.
    pub pacing: Pacing,
    /// Busy polling (see the module docs): SO_BUSY_POLL in microseconds (0: spin without
    /// setting it). `None`: blocking calls.
    pub busy_poll: Option<u32>,
}

/// A TCP RR server end.
#[derive(Debug, Default)]
pub struct TcpRrServer {
    /// The flows.
    pub flows: Vec<TcpRrFlow>,
    /// Busy polling, as [`TcpRrClient::busy_poll`].
    pub busy_poll: Option<u32>,
}

/// A TCP CRR client end.
#[derive(Debug)]
pub struct CrrClient {
    /// The flows.
    pub flows: Vec<CrrClientFlow>,
    /// How to close each connection.
    pub close_mode: CloseMode,
    /// Longest one connection's transaction may wait on the server (request, response,
    /// close) before it counts as an error.
    pub peer_timeout: Duration,
}

impl Default for CrrClient {
    /// No flows, orderly close, [`DEFAULT_PEER_TIMEOUT`].
    fn default() -> Self {
        CrrClient {
            flows: Vec::new(),
            close_mode: CloseMode::Orderly,
            peer_timeout: DEFAULT_PEER_TIMEOUT,
        }
    }
}

/// A TCP CRR server end.
#[derive(Debug)]
pub struct CrrServer {
    /// The flows.
    pub flows: Vec<CrrServerFlow>,
    /// Longest one connection's transaction may wait on the client (request, response,
    /// close) before it counts as an error.
    pub peer_timeout: Duration,
}

impl Default for CrrServer {
    /// No flows, [`DEFAULT_PEER_TIMEOUT`].
    fn default() -> Self {
        CrrServer {
            flows: Vec::new(),
            peer_timeout: DEFAULT_PEER_TIMEOUT,
        }
    }
}

/// A UDP RR client end.
#[derive(Debug)]
pub struct UdpRrClient {
    /// The flows.
    pub flows: Vec<UdpRrFlow>,
    /// Wait for a response before the transaction counts as lost.
    pub timeout: Duration,
    /// Busy polling, as [`TcpRrClient::busy_poll`].
    pub busy_poll: Option<u32>,
}

impl Default for UdpRrClient {
    /// No flows, [`DEFAULT_UDP_TIMEOUT`], no busy polling.
    fn default() -> Self {
        UdpRrClient {
            flows: Vec::new(),
            timeout: DEFAULT_UDP_TIMEOUT,
            busy_poll: None,
        }
    }
}

/// A UDP RR server end.
#[derive(Debug, Default)]
pub struct UdpRrServer {
    /// The flows.
    pub flows: Vec<UdpRrFlow>,
    /// Busy polling, as [`TcpRrClient::busy_poll`].
    pub busy_poll: Option<u32>,
}

/// The flows of one end; the variant selects workload and role and carries what only they
/// use.
#[derive(Debug)]
pub enum RrFlows {
    /// TCP RR client.
    TcpClient(TcpRrClient),
    /// TCP RR server.
    TcpServer(TcpRrServer),
    /// TCP CRR client.
    CrrClient(CrrClient),
    /// TCP CRR server.
    CrrServer(CrrServer),
    /// UDP RR client.
    UdpClient(UdpRrClient),
    /// UDP RR server.
    UdpServer(UdpRrServer),
}

/// A TCP RR client flow's loop as its thread runs it: an open-loop client keeps a sender of
/// the thread-registration channel for its sender thread.
pub(super) enum ClientLoop {
    Closed { burst: u32 },
    Open(OpenLoop, mpsc::Sender<(usize, i32)>),
}

/// One flow's work, with the parameters of its workload and role.
pub(super) enum Job {
    TcpClient {
        stream: TcpStream,
        run: ClientLoop,
        busy_poll: Option<u32>,
    },
    TcpServer {
        stream: TcpStream,
        busy_poll: Option<u32>,
    },
    CrrClient {
        connect: ConnectFn,
        close_mode: CloseMode,
        peer_timeout: Duration,
    },
    CrrServer {
        accepted: Receiver<TcpStream>,
        peer_timeout: Duration,
    },
    UdpClient {
        socket: UdpSocket,
        timeout: Duration,
        busy_poll: Option<u32>,
    },
    UdpServer {
        socket: UdpSocket,
        busy_poll: Option<u32>,
    },
}

impl RrFlows {
    /// This end's role.
    pub fn role(&self) -> RrRole {
        match self {
            RrFlows::TcpClient(_) | RrFlows::CrrClient(_) | RrFlows::UdpClient(_) => RrRole::Client,
            RrFlows::TcpServer(_) | RrFlows::CrrServer(_) | RrFlows::UdpServer(_) => RrRole::Server,
        }
    }

    /// A CRR client's close mode (what its report names).
    pub(super) fn close_mode(&self) -> Option<CloseMode> {
        match self {
            RrFlows::CrrClient(c) => Some(c.close_mode),
            _ => None,
        }
    }

    /// An open-loop TCP RR client's schedule.
    pub(super) fn open_loop(&self) -> Option<OpenLoop> {
        match self {
            RrFlows::TcpClient(TcpRrClient {
                pacing: Pacing::Open(ol),
                ..
            }) => Some(*ol),
            _ => None,
        }
    }

    /// True when these are flows that block in their reads with no timeout and are ended by
    /// the waker: closed-loop TCP RR clients, TCP RR servers and UDP RR servers, without busy
    /// polling (an open-loop client's two threads, a busy-polling flow and a UDP client,
    /// whose receive timeout is its transactions' loss timeout, keep their timeouts).
    pub(super) fn blocking_reads(&self) -> bool {
        match self {
            RrFlows::TcpClient(c) => {
                c.busy_poll.is_none()
                    && matches!(c.pacing, Pacing::Closed { .. })
                    && !c.flows.is_empty()
            }
            RrFlows::TcpServer(s) => s.busy_poll.is_none() && !s.flows.is_empty(),
            RrFlows::UdpServer(s) => s.busy_poll.is_none() && !s.flows.is_empty(),
            RrFlows::CrrClient(_) | RrFlows::CrrServer(_) | RrFlows::UdpClient(_) => false,
        }
    }

    /// Each flow's job; an open-loop client's keep a clone of `tid_tx`.
    pub(super) fn into_jobs(self, tid_tx: &mpsc::Sender<(usize, i32)>) -> Vec<(u32, Job)> {
        fn map<T>(v: Vec<T>, f: impl FnMut(T) -> (u32, Job)) -> Vec<(u32, Job)> {
            v.into_iter().map(f).collect()
        }
        match self {
            RrFlows::TcpClient(TcpRrClient {
                flows,
                pacing,
                busy_poll,
            }) => map(flows, |f| {
                let run = match pacing {
                    Pacing::Closed { burst } => ClientLoop::Closed { burst },
                    Pacing::Open(ol) => ClientLoop::Open(ol, tid_tx.clone()),
                };
                let stream = f.stream;
                (
                    f.flow,
                    Job::TcpClient {
                        stream,
                        run,
                        busy_poll,
                    },
                )
            }),
            RrFlows::TcpServer(TcpRrServer { flows, busy_poll }) => map(flows, |f| {
                let stream = f.stream;
                (f.flow, Job::TcpServer { stream, busy_poll })
            }),
            RrFlows::CrrClient(CrrClient {
                flows,
                close_mode,
                peer_timeout,
            }) => map(flows, |f| {
                let connect = f.connect;
                let job = Job::CrrClient {
                    connect,
                    close_mode,
                    peer_timeout,
                };
                (f.flow, job)
            }),
            RrFlows::CrrServer(CrrServer {
                flows,
                peer_timeout,
            }) => map(flows, |f| {
                let accepted = f.accepted;
                (
                    f.flow,
                    Job::CrrServer {
                        accepted,
                        peer_timeout,
                    },
                )
            }),
            RrFlows::UdpClient(UdpRrClient {
                flows,
                timeout,
                busy_poll,
            }) => map(flows, |f| {
                let socket = f.socket;
                let job = Job::UdpClient {
                    socket,
                    timeout,
                    busy_poll,
                };
                (f.flow, job)
            }),
            RrFlows::UdpServer(UdpRrServer { flows, busy_poll }) => map(flows, |f| {
                let socket = f.socket;
                (f.flow, Job::UdpServer { socket, busy_poll })
            }),
        }
    }
}
