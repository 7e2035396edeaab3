//! The UDP streams of an iperf3 test (`-u`): iperf3's setup handshake on the iperf3 port.
//!
//! For each stream the client sends one connect datagram ("9876", or ≤3.11's value) from the
//! stream's own UDP socket to the server's iperf3 port. The daemon takes the first datagram
//! that comes from the control connection's host on a socket bound to the iperf3 port,
//! connects that socket to the datagram's source (so it hears that stream only and sends from
//! the iperf3 port, as the client expects), answers "6789" on it, and binds a fresh socket on
//! the port for the next stream, as iperf3's own server does. Datagrams from any other host
//! are dropped unanswered, so no datagram of the daemon ever goes to a third address.
//!
//! The connect datagrams name no test, so one test at a time listens for them (the state's
//! `iperf3_udp_setup` lock); another UDP test waits for it, within its own handshake deadline.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Socket, Type};
use wirebench_iperf3::udp::REPLY;
use wirebench_model::spec::TestSpec;
use wirebench_proto::udpsetup::same_host;

use crate::udpsetup::apply_udp;
use crate::NetError;

/// One stream's socket and its client address.
pub(super) type UdpStream = (UdpSocket, SocketAddr);

/// Listens on the iperf3 port for the connect datagrams of one test.
pub(super) struct UdpCollector {
    listener: UdpSocket,
    local: SocketAddr,
    control_host: IpAddr,
    /// Datagrams from other hosts, dropped.
    pub(super) foreign: u64,
}

/// A UDP socket bound to `local` beside the test's other stream sockets (SO_REUSEADDR; a
/// connected socket gets its 4-tuple's datagrams first).
fn bind(local: SocketAddr) -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::for_address(local), Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    s.bind(&local.into())?;
    Ok(s.into())
}

impl UdpCollector {
    /// Listen on `local` (the control connection's local address: the iperf3 port) for the
    /// streams of a test whose control connection comes from `control_host`.
    pub(super) fn new(local: SocketAddr, control_host: IpAddr) -> Result<UdpCollector, NetError> {
        let local = SocketAddr::new(local.ip().to_canonical(), local.port());
        let listener = bind(local).map_err(NetError::io("binding the iperf3 UDP port"))?;
        Ok(UdpCollector {
            listener,
            local,
            control_host: control_host.to_canonical(),
            foreign: 0,
        })
    }

    /// Wait up to `wait` for the next stream's connect datagram; on one from the control
    /// connection's host, set the stream up and return its socket.
    pub(super) fn poll(
        &mut self,
        wait: Duration,
        spec: &TestSpec,
    ) -> Result<Option<UdpStream>, NetError> {
        let _ = self
            .listener
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))));
        let mut buf = [0u8; 64];
        let from = match self.listener.recv_from(&mut buf) {
            Ok((_, from)) => from,
            Err(e) if crate::conn::is_timeout(&e) => return Ok(None),
            // An ICMP error for an earlier reply, or a truncated datagram: not a stream.
            Err(_) => return Ok(None),
        };
        if !same_host(from.ip().to_canonical(), self.control_host) {
            self.foreign += 1;
            return Ok(None);
        }
        let next = bind(self.local).map_err(NetError::io("binding the iperf3 UDP port"))?;
        let sock = std::mem::replace(&mut self.listener, next);
        sock.connect(from)
            .map_err(NetError::io("connecting an iperf3 UDP stream"))?;
        // Whatever was queued from elsewhere before the connect is not the stream's.
        let _ = sock.set_nonblocking(true);
        while sock.recv(&mut buf).is_ok() {}
        let _ = sock.set_nonblocking(false);
        apply_udp(&sock, spec)?;
        sock.send(&REPLY)
            .map_err(NetError::io("answering an iperf3 UDP stream"))?;
        Ok(Some((sock, from)))
    }
}
