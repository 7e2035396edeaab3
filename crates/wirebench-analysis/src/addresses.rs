//! Where each flow ran: the addresses of its data socket as both ends reported them (each
//! end's own address, getsockname, and the other end's as it saw it, getpeername), whatever
//! the workload. Without address translation between the ends, the client's `local` is the
//! server's `peer` and the other way round.

use wirebench_model::result::RunRecord;
use wirebench_model::side::{SideData, SideReport};

/// One flow's addresses (`ip:port`); `None` where an end did not report one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowAddresses {
    /// The client's own address.
    pub client_local: Option<String>,
    /// The server's address as the client saw it.
    pub client_peer: Option<String>,
    /// The server's own address.
    pub server_local: Option<String>,
    /// The client's address as the server saw it.
    pub server_peer: Option<String>,
}

/// What `report` says of `flow`'s addresses: (this end's, the other end's).
pub fn of_end(report: &SideReport, flow: u32) -> (Option<String>, Option<String>) {
    let pair = |l: &Option<String>, p: &Option<String>| (l.clone(), p.clone());
    match &report.data {
        Some(SideData::Stream(s)) => s
            .flows
            .iter()
            .find(|f| f.flow == flow)
            .map(|f| pair(&f.socket.local, &f.socket.peer)),
        Some(SideData::Rr(r)) => r
            .flows
            .iter()
            .find(|f| f.flow == flow)
            .map(|f| pair(&f.local, &f.peer)),
        Some(SideData::UdpStream(u)) => u
            .senders
            .iter()
            .find(|f| f.flow == flow)
            .map(|f| pair(&f.local, &f.peer))
            .or_else(|| {
                u.receivers
                    .iter()
                    .find(|f| f.flow == flow)
                    .map(|f| pair(&f.local, &f.peer))
            }),
        None => None,
    }
    .unwrap_or_default()
}

/// The addresses of `flow` in `run`, from both ends' reports.
pub fn flow_addresses(run: &RunRecord, flow: u32) -> FlowAddresses {
    let end = |r: &Option<SideReport>| r.as_ref().map(|r| of_end(r, flow)).unwrap_or_default();
    let (client_local, client_peer) = end(&run.client);
    let (server_local, server_peer) = end(&run.server);
    FlowAddresses {
        client_local,
        client_peer,
        server_local,
        server_peer,
    }
}
