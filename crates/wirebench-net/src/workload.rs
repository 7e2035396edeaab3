//! Workload setup behind one trait: how an end turns the sockets it has after the setup
//! exchange into the data plan its engine runs.
//!
//! Every workload goes through the same steps at both ends — open (client) or collect
//! (server) [`TestSpec::setup_connections`] data connections, bind UDP sockets over them when
//! the workload is UDP ([`WorkloadSetup::binds_udp`]), keep routing connections by token
//! while the engine runs when the workload opens a connection per transaction
//! ([`WorkloadSetup::routes_while_running`], CRR) — and only the last step, [`WorkloadSetup::plan`],
//! differs. [`setup_of`] picks the implementation for a spec.

use std::net::{SocketAddr, TcpStream, UdpSocket};

use wirebench_engine::rr::{ConnectFn, CrrServerFlow, RrFlows, TcpRrFlow, UdpRrFlow};
use wirebench_engine::stream::FlowPlan;
use wirebench_engine::udp::{UdpPlan, UdpRecvSocket, UdpSendFlow};
use wirebench_model::side::HostRole;
use wirebench_model::spec::{TestSpec, WorkloadKind};

use crate::end::DataPlan;
use crate::NetError;

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
pub(crate) trait WorkloadSetup: Sync {
    /// The setup connections carry the exchange that binds each flow's UDP socket.
    fn binds_udp(&self) -> bool {
        false
    }

    /// The daemon keeps routing the test's connections to its flows while the engine runs.
    fn routes_while_running(&self) -> bool {
        false
    }

    /// The data plan of `host` from what it holds.
    fn plan(&self, spec: &TestSpec, host: HostRole, s: EndSockets) -> Result<DataPlan, NetError>;
}

struct Stream;
struct Rr;
struct Crr;
struct UdpRr;
struct UdpStream;

/// The setup of `spec`'s workload.
pub(crate) fn setup_of(spec: &TestSpec) -> &'static dyn WorkloadSetup {
    match spec.kind() {
        WorkloadKind::Stream => &Stream,
        WorkloadKind::Rr => &Rr,
        WorkloadKind::Crr => &Crr,
        WorkloadKind::UdpRr => &UdpRr,
        WorkloadKind::UdpStream => &UdpStream,
    }
}

fn sockets_of(conns: Vec<(u32, TcpStream)>) -> Vec<TcpStream> {
    conns.into_iter().map(|(_, s)| s).collect()
}

impl WorkloadSetup for Stream {
    fn plan(&self, spec: &TestSpec, host: HostRole, s: EndSockets) -> Result<DataPlan, NetError> {
        let dirs = spec.flow_dirs();
        let mut plans: Vec<FlowPlan> = s
            .conns
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
        Ok(DataPlan::Stream(plans))
    }
}

impl WorkloadSetup for Rr {
    fn plan(&self, _spec: &TestSpec, host: HostRole, s: EndSockets) -> Result<DataPlan, NetError> {
        let mut flows: Vec<TcpRrFlow> = s
            .conns
            .into_iter()
            .map(|(flow, stream)| TcpRrFlow { flow, stream })
            .collect();
        flows.sort_by_key(|f| f.flow);
        let flows = match host {
            HostRole::Client => RrFlows::TcpClient(flows),
            HostRole::Server => RrFlows::TcpServer(flows),
        };
        Ok(DataPlan::Rr {
            flows,
            keep: Vec::new(),
        })
    }
}

impl WorkloadSetup for Crr {
    fn routes_while_running(&self) -> bool {
        true
    }

    fn plan(&self, _spec: &TestSpec, host: HostRole, s: EndSockets) -> Result<DataPlan, NetError> {
        let flows = match host {
            HostRole::Client => RrFlows::CrrClient(
                s.crr_client
                    .into_iter()
                    .map(|(flow, connect)| wirebench_engine::rr::CrrClientFlow { flow, connect })
                    .collect(),
            ),
            HostRole::Server => RrFlows::CrrServer(s.crr_server),
        };
        Ok(DataPlan::Rr {
            flows,
            keep: Vec::new(),
        })
    }
}

impl WorkloadSetup for UdpRr {
    fn binds_udp(&self) -> bool {
        true
    }

    fn plan(&self, _spec: &TestSpec, host: HostRole, s: EndSockets) -> Result<DataPlan, NetError> {
        let mut flows = Vec::new();
        for (flow, socket, peer) in s.udp {
            // Both ends talk to their peer only: a server never answers anybody else.
            if host == HostRole::Server {
                socket
                    .connect(peer)
                    .map_err(NetError::io("connecting a UDP data socket"))?;
            }
            flows.push(UdpRrFlow { flow, socket });
        }
        flows.sort_by_key(|f| f.flow);
        let flows = match host {
            HostRole::Client => RrFlows::UdpClient(flows),
            HostRole::Server => RrFlows::UdpServer(flows),
        };
        Ok(DataPlan::Rr {
            flows,
            keep: sockets_of(s.conns),
        })
    }
}

impl WorkloadSetup for UdpStream {
    fn binds_udp(&self) -> bool {
        true
    }

    /// Flows this end sends get their socket connected to the peer; flows it receives keep
    /// an unconnected socket on which only the peer's datagrams count.
    fn plan(&self, spec: &TestSpec, host: HostRole, s: EndSockets) -> Result<DataPlan, NetError> {
        let dirs = spec.flow_dirs();
        let mut plan = UdpPlan::default();
        for (flow, socket, peer) in s.udp {
            let Some(&dir) = dirs.get(flow as usize) else {
                continue;
            };
            if host.sends(dir) {
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
        Ok(DataPlan::Udp {
            plan,
            keep: sockets_of(s.conns),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use wirebench_model::side::Role;
    use wirebench_model::spec::{Direction, StreamSpec, WorkloadSpec};

    use super::*;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (c, l.accept().unwrap().0)
    }

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
        let DataPlan::Stream(plans) = setup_of(&spec)
            .plan(&spec, HostRole::Server, sockets)
            .unwrap()
        else {
            panic!("a stream plan");
        };
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
            let s = setup_of(&TestSpec::new(w));
            assert_eq!((s.binds_udp(), s.routes_while_running()), (udp, routes));
        }
    }
}
