//! Workload setup behind one trait: how an end turns the sockets it has after the setup
//! exchange into the job its engine runs.
//!
//! Every workload goes through the same steps at both ends — open (client) or collect
//! (server) [`TestSpec::setup_connections`] data connections, bind UDP sockets over them when
//! the workload is UDP ([`WorkloadSetup::binds_udp`]), keep routing connections by token
//! while the engine runs when the workload opens a connection per transaction
//! ([`WorkloadSetup::routes_while_running`], CRR) — and only the last step,
//! [`WorkloadSetup::plan`], differs. [`setup_of`] narrows the spec's workload once: each
//! implementation holds the spec's common part and its own workload spec type, and builds
//! its engine's configuration from those two.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use wirebench_engine::rr::{
    ConnectFn, CrrClient, CrrClientFlow, CrrServer, CrrServerFlow, OpenLoop, Pacing, RrConfig,
    RrFlows, TcpRrClient, TcpRrFlow, TcpRrServer, UdpRrClient, UdpRrFlow, UdpRrServer,
};
use wirebench_engine::stream::{FlowPlan, StreamConfig};
use wirebench_engine::udp::{UdpConfig, UdpPlan, UdpRecvSocket, UdpSendFlow};
use wirebench_engine::{Pinning, Timing};
use wirebench_model::side::HostRole;
use wirebench_model::spec::{
    BusyPoll, CommonSpec, CrrSpec, FlowDir, RrLoop, RrSpec, StreamSpec, TestSpec, UdpRrSpec,
    UdpStreamSpec, WorkloadSpec,
};
use wirebench_proto::udp::DEFAULT_REORDER_WINDOW_SEQS;

use crate::end::{EndParams, EngineJob, RrJob, StreamJob, UdpJob, DRAIN_LIMIT};
use crate::NetError;

/// A CRR transaction's longest wait on the peer.
const CRR_PEER_TIMEOUT: Duration = Duration::from_secs(1);

/// What an end holds once the setup is done.
#[derive(Default)]
pub(crate) struct EndSockets {
    /// The setup (data) connections, by flow id.
    pub(crate) conns: Vec<(u32, TcpStream)>,
    /// UDP workloads: each flow's UDP socket and its peer's UDP address.
    pub(crate) udp: Vec<(u32, UdpSocket, SocketAddr)>,
    /// CRR server: each flow's queue of connections.
    pub(crate) crr_server: Vec<CrrServerFlow>,
    /// CRR client: each flow's connect closure.
    pub(crate) crr_client: Vec<(u32, ConnectFn)>,
}

/// One workload's last setup step.
pub(crate) trait WorkloadSetup {
    /// The setup connections carry the exchange that binds each flow's UDP socket.
    fn binds_udp(&self) -> bool {
        false
    }

    /// The daemon keeps routing the test's connections to its flows while the engine runs.
    fn routes_while_running(&self) -> bool {
        false
    }

    /// The engine job of the end `end` describes, from what it holds.
    fn plan(&self, end: &EndParams, s: EndSockets) -> Result<Box<dyn EngineJob>, NetError>;
}

/// A workload's setup: the spec's common part and the workload's own spec.
struct Setup<'a, W> {
    common: &'a CommonSpec,
    workload: &'a W,
}

/// The setup of `spec`'s workload: the one place an end narrows [`WorkloadSpec`].
pub(crate) fn setup_of(spec: &TestSpec) -> Box<dyn WorkloadSetup + '_> {
    let common = &spec.common;
    match &spec.workload {
        WorkloadSpec::Stream(workload) => Box::new(Setup { common, workload }),
        WorkloadSpec::Rr(workload) => Box::new(Setup { common, workload }),
        WorkloadSpec::Crr(workload) => Box::new(Setup { common, workload }),
        WorkloadSpec::UdpRr(workload) => Box::new(Setup { common, workload }),
        WorkloadSpec::UdpStream(workload) => Box::new(Setup { common, workload }),
    }
}

fn sockets_of(conns: Vec<(u32, TcpStream)>) -> Vec<TcpStream> {
    conns.into_iter().map(|(_, s)| s).collect()
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// The engine timing of a spec's common part at the end `end` describes, its data threads
/// placed by `pin`.
fn timing(c: &CommonSpec, end: &EndParams, pin: Pinning) -> Timing {
    Timing {
        warmup: ms(c.warmup_ms),
        duration: ms(c.duration_ms),
        interval: c.interval_ms.map(ms),
        drain_limit: DRAIN_LIMIT,
        pin,
        policy: end.policy,
        buffer_offset: c
            .buffer_offset_bytes
            .map_or(wirebench_sys::mem::DEFAULT_OFFSET_BYTES, |o| o as usize),
    }
}

/// Every data thread on the end's CPU, if the spec names one; else no pinning.
fn end_pinning(end: &EndParams) -> Pinning {
    Pinning {
        cpu: end.cpu,
        round_robin: Vec::new(),
    }
}

/// The engine configuration of a stream at the end `end` describes.
pub(crate) fn stream_config(c: &CommonSpec, s: &StreamSpec, end: &EndParams) -> StreamConfig {
    let round_robin = if s.pin_threads && end.cpu.is_none() {
        wirebench_sys::thread::current_thread_affinity().unwrap_or_default()
    } else {
        Vec::new()
    };
    let pin = Pinning {
        cpu: end.cpu,
        round_robin,
    };
    StreamConfig {
        timing: timing(c, end, pin),
        send_size_bytes: s.send_size_bytes as usize,
        recv_size_bytes: s.recv_size_bytes as usize,
        rate_bps: s.rate_bps,
        send_path: s.send_path,
        recv_path: s.recv_path,
        recv_wait: s.recv_wait,
        verify: s.verify,
        threads: s.threads,
        stop_after_bytes: s.stop_after_bytes,
    }
}

/// The job of a request/response end running `flows` (which carry their workload's own
/// parameters), with the configuration every request/response workload shares: the common
/// timing and the `(request, response)` sizes. `keep` stays open until the engine ends.
fn rr_job(
    c: &CommonSpec,
    end: &EndParams,
    (req, resp): (u32, u32),
    flows: RrFlows,
    keep: Vec<TcpStream>,
) -> Box<dyn EngineJob> {
    let cfg = RrConfig {
        timing: timing(c, end, end_pinning(end)),
        request_size_bytes: req as usize,
        response_size_bytes: resp as usize,
    };
    Box::new(RrJob { cfg, flows, keep })
}

fn busy_poll_us(b: Option<BusyPoll>) -> Option<u32> {
    b.map(|b| b.so_busy_poll_us)
}

/// The engine's pacing of a TCP RR client.
fn pacing(p: RrLoop) -> Pacing {
    match p {
        RrLoop::Closed { burst } => Pacing::Closed { burst },
        RrLoop::Open {
            transactions_per_s,
            max_outstanding,
        } => Pacing::Open(OpenLoop {
            per_s: transactions_per_s,
            max_outstanding,
        }),
    }
}

/// The stream flows of `host` over its connections, in flow-id order: each flow's direction
/// from `dirs` (by flow id), connections of flows not in `dirs` dropped.
fn stream_plans(dirs: &[FlowDir], host: HostRole, conns: Vec<(u32, TcpStream)>) -> Vec<FlowPlan> {
    let mut plans: Vec<FlowPlan> = conns
        .into_iter()
        .filter_map(|(flow, stream)| {
            let dir = *dirs.get(flow as usize)?;
            Some(FlowPlan {
                flow,
                dir,
                role: host.role(dir),
                stream,
            })
        })
        .collect();
    plans.sort_by_key(|p| p.flow);
    plans
}

impl WorkloadSetup for Setup<'_, StreamSpec> {
    fn plan(&self, end: &EndParams, s: EndSockets) -> Result<Box<dyn EngineJob>, NetError> {
        let dirs = self.workload.direction.flow_dirs(self.common.flows);
        let plans = stream_plans(&dirs, end.host, s.conns);
        let cfg = stream_config(self.common, self.workload, end);
        Ok(Box::new(StreamJob { cfg, plans }))
    }
}

impl WorkloadSetup for Setup<'_, RrSpec> {
    fn plan(&self, end: &EndParams, s: EndSockets) -> Result<Box<dyn EngineJob>, NetError> {
        let w = self.workload;
        let busy_poll = busy_poll_us(w.busy_poll);
        let mut flows: Vec<TcpRrFlow> = s
            .conns
            .into_iter()
            .map(|(flow, stream)| TcpRrFlow { flow, stream })
            .collect();
        flows.sort_by_key(|f| f.flow);
        let flows = match end.host {
            HostRole::Client => RrFlows::TcpClient(TcpRrClient {
                flows,
                pacing: pacing(w.pacing),
                busy_poll,
            }),
            HostRole::Server => RrFlows::TcpServer(TcpRrServer { flows, busy_poll }),
        };
        let sizes = (w.request_size_bytes, w.response_size_bytes);
        Ok(rr_job(self.common, end, sizes, flows, Vec::new()))
    }
}

impl WorkloadSetup for Setup<'_, CrrSpec> {
    fn routes_while_running(&self) -> bool {
        true
    }

    fn plan(&self, end: &EndParams, s: EndSockets) -> Result<Box<dyn EngineJob>, NetError> {
        let w = self.workload;
        let flows = match end.host {
            HostRole::Client => RrFlows::CrrClient(CrrClient {
                flows: s
                    .crr_client
                    .into_iter()
                    .map(|(flow, connect)| CrrClientFlow { flow, connect })
                    .collect(),
                close_mode: w.close_mode,
                peer_timeout: CRR_PEER_TIMEOUT,
            }),
            HostRole::Server => RrFlows::CrrServer(CrrServer {
                flows: s.crr_server,
                peer_timeout: CRR_PEER_TIMEOUT,
            }),
        };
        let sizes = (w.request_size_bytes, w.response_size_bytes);
        Ok(rr_job(self.common, end, sizes, flows, Vec::new()))
    }
}

impl WorkloadSetup for Setup<'_, UdpRrSpec> {
    fn binds_udp(&self) -> bool {
        true
    }

    fn plan(&self, end: &EndParams, s: EndSockets) -> Result<Box<dyn EngineJob>, NetError> {
        let w = self.workload;
        let busy_poll = busy_poll_us(w.busy_poll);
        let mut flows = Vec::new();
        for (flow, socket, peer) in s.udp {
            // Both ends talk to their peer only: a server never answers anybody else.
            if end.host == HostRole::Server {
                socket
                    .connect(peer)
                    .map_err(NetError::io("connecting a UDP data socket"))?;
            }
            flows.push(UdpRrFlow { flow, socket });
        }
        flows.sort_by_key(|f| f.flow);
        let flows = match end.host {
            HostRole::Client => RrFlows::UdpClient(UdpRrClient {
                flows,
                timeout: ms(w.timeout_ms),
                busy_poll,
            }),
            HostRole::Server => RrFlows::UdpServer(UdpRrServer { flows, busy_poll }),
        };
        let sizes = (w.request_size_bytes, w.response_size_bytes);
        Ok(rr_job(self.common, end, sizes, flows, sockets_of(s.conns)))
    }
}

impl WorkloadSetup for Setup<'_, UdpStreamSpec> {
    fn binds_udp(&self) -> bool {
        true
    }

    /// Flows this end sends get their socket connected to the peer; flows it receives keep
    /// an unconnected socket on which only the peer's datagrams count.
    fn plan(&self, end: &EndParams, s: EndSockets) -> Result<Box<dyn EngineJob>, NetError> {
        let w = self.workload;
        let dirs = w.direction.flow_dirs(self.common.flows);
        let mut plan = UdpPlan::default();
        for (flow, socket, peer) in s.udp {
            let Some(&dir) = dirs.get(flow as usize) else {
                continue;
            };
            if end.host.sends(dir) {
                socket
                    .connect(peer)
                    .map_err(NetError::io("connecting a UDP data socket"))?;
                plan.senders.push(UdpSendFlow { flow, socket });
            } else {
                plan.receivers.push(UdpRecvSocket {
                    flows: vec![flow],
                    socket,
                    peer: Some(peer),
                });
            }
        }
        let cfg = UdpConfig {
            timing: timing(self.common, end, end_pinning(end)),
            datagram_bytes: w.datagram_bytes as usize,
            rate_bps: w.rate_bps,
            reorder_window_seqs: DEFAULT_REORDER_WINDOW_SEQS,
            wire: end.udp_wire,
        };
        Ok(Box::new(UdpJob {
            cfg,
            plan,
            keep: sockets_of(s.conns),
        }))
    }
}

#[cfg(test)]
mod tests {

    use wirebench_model::side::Role;
    use wirebench_model::spec::{Direction, StreamSpec, WorkloadSpec};

    use super::*;

    use wirebench_testkit::net::loopback_pair as pair;

    #[test]
    fn stream_plans_give_each_end_its_role_and_drop_unknown_flows() {
        let mut spec = TestSpec::new(WorkloadSpec::Stream(StreamSpec {
            direction: Direction::Bidir,
            ..StreamSpec::default()
        }));
        spec.common.flows = 1;
        let (a, b) = pair();
        let (c, _d) = pair();
        let (e, _f) = pair();
        let sockets = EndSockets {
            // Flow 7 is not in the spec: dropped. Out of order: sorted.
            conns: vec![(1, a), (0, c), (7, e)],
            ..EndSockets::default()
        };
        let plans = stream_plans(&spec.flow_dirs(), HostRole::Server, sockets.conns);
        let got: Vec<(u32, Role)> = plans.iter().map(|p| (p.flow, p.role)).collect();
        assert_eq!(got, vec![(0, Role::Receiver), (1, Role::Sender)]);
        drop(b);
    }

    #[test]
    fn only_udp_and_crr_need_the_extra_steps() {
        use wirebench_model::spec::*;
        for (w, udp, routes) in [
            (WorkloadSpec::Stream(StreamSpec::default()), false, false),
            (WorkloadSpec::Rr(RrSpec::default()), false, false),
            (WorkloadSpec::Crr(CrrSpec::default()), false, true),
            (WorkloadSpec::UdpRr(UdpRrSpec::default()), true, false),
            (
                WorkloadSpec::UdpStream(UdpStreamSpec::default()),
                true,
                false,
            ),
        ] {
            let spec = TestSpec::new(w);
            let s = setup_of(&spec);
            assert_eq!((s.binds_udp(), s.routes_while_running()), (udp, routes));
        }
    }
}
