//! Binding UDP data sockets to an admitted test (UDP stream and UDP RR): the socket work of
//! the exchange whose messages [`wirebench_proto::udpsetup`] defines (see there for the
//! steps).
//!
//! Every wait is bounded by one deadline. Afterwards the TCP connection stays open and idle
//! until the test ends. The server takes a flow's UDP peer only from a hello that comes from
//! the control connection's host, so a hello from a third address can never make the daemon
//! send datagrams there (reflection); once the peer is known, a server socket that answers
//! or sends is connected to it and everything queued before is dropped, so the engine never
//! answers a datagram from a third address either.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_model::side::HostRole;
use wirebench_model::spec::{TestSpec, WorkloadSpec};
use wirebench_proto::data::Token;
use wirebench_proto::udpsetup::{
    decode_ack, decode_port, encode_port, hello, is_hello, same_host, ACK, HELLO_REPEAT_MS,
    SETUP_MSG_BYTES,
};

use crate::NetError;

/// Apply the spec's socket buffer request to a UDP socket.
pub fn apply_udp(sock: &UdpSocket, spec: &TestSpec) -> Result<(), NetError> {
    if let Some(w) = spec.common.window_bytes {
        let s = SockRef::from(sock);
        s.set_send_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_SNDBUF {w}: {e}")))?;
        s.set_recv_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_RCVBUF {w}: {e}")))?;
    }
    crate::sockopt::apply_ip(sock, spec)
}

fn invalid(context: &'static str, what: impl std::fmt::Display) -> NetError {
    NetError::io(context)(io::Error::new(io::ErrorKind::InvalidData, what.to_string()))
}

/// True if the server's engine sends on this UDP flow's socket (UDP_RR answers; a UDP
/// stream flow the server sends), false if it only receives on it.
fn answers_or_sends(spec: &TestSpec, flow: u32) -> bool {
    match spec.workload {
        WorkloadSpec::UdpStream(_) => spec
            .flow_dirs()
            .get(flow as usize)
            .is_some_and(|d| HostRole::Server.sends(*d)),
        WorkloadSpec::UdpRr(_)
        | WorkloadSpec::Stream(_)
        | WorkloadSpec::Rr(_)
        | WorkloadSpec::Crr(_) => true,
    }
}

/// Server side of one flow's setup over its TCP data connection `tcp`, whose test's control
/// connection comes from `control_peer`. Returns the UDP socket (connected to the client's
/// UDP address unless the server only receives on it) and that address.
pub fn server_side(
    tcp: &mut TcpStream,
    token: Token,
    flow: u32,
    spec: &TestSpec,
    control_peer: IpAddr,
    deadline: Instant,
) -> Result<(UdpSocket, SocketAddr), NetError> {
    let local = tcp
        .local_addr()
        .map_err(NetError::io("reading the data connection's address"))?;
    let sock = UdpSocket::bind(SocketAddr::new(local.ip(), 0))
        .map_err(NetError::io("binding a UDP data socket"))?;
    apply_udp(&sock, spec)?;
    let port = sock
        .local_addr()
        .map_err(NetError::io("reading the UDP socket's port"))?
        .port();
    tcp.set_write_timeout(Some(Duration::from_secs(2)))
        .and_then(|()| tcp.write_all(&encode_port(port)))
        .map_err(NetError::io("sending the UDP port"))?;
    let mut buf = [0u8; 64];
    let ours = |pkt: &[u8], from: SocketAddr| {
        same_host(from.ip(), control_peer) && is_hello(pkt, token, flow)
    };
    let peer = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(NetError::io("waiting for the client's UDP hello")(
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no UDP hello arrived from the client's host (is UDP blocked between the \
                     hosts?)",
                ),
            ));
        }
        sock.set_read_timeout(Some(left))
            .map_err(NetError::io("configuring the UDP socket"))?;
        match sock.recv_from(&mut buf) {
            Ok((n, from)) if ours(buf.get(..n).unwrap_or_default(), from) => break from,
            // Anything else (another host, another flow, garbage) is ignored.
            Ok(_) => {}
            Err(e) if crate::conn::is_timeout(&e) => {}
            Err(e) => return Err(NetError::io("waiting for the client's UDP hello")(e)),
        }
    };
    let _ = sock.set_nonblocking(true);
    if answers_or_sends(spec, flow) {
        // From now on the socket hears the client's UDP address only, so that no datagram
        // from anybody else (queued before the engine connects it) is ever answered: the
        // UDP_RR server answers the address a request came from. Whatever was queued before
        // (repeated hellos, other hosts' datagrams) is not the test's data (the client
        // sends none before our acknowledgement): drop it all.
        sock.connect(peer)
            .map_err(NetError::io("connecting the UDP data socket"))?;
        while sock.recv_from(&mut buf).is_ok() {}
    } else {
        // A receiver's socket stays unconnected (the engine counts datagrams from elsewhere
        // as foreign); repeated hellos already queued are not the test's data.
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            if from != peer || !is_hello(buf.get(..n).unwrap_or_default(), token, flow) {
                break;
            }
        }
    }
    let _ = sock.set_nonblocking(false);
    tcp.write_all(&ACK)
        .map_err(NetError::io("acknowledging the UDP hello"))?;
    Ok((sock, peer))
}

/// Client side of one flow's setup over its TCP data connection `tcp` (whose data hello has
/// been sent). Returns the UDP socket, connected to the server's UDP port, and that address.
pub fn client_side(
    tcp: &mut TcpStream,
    token: Token,
    flow: u32,
    spec: &TestSpec,
    deadline: Instant,
) -> Result<(UdpSocket, SocketAddr), NetError> {
    let mut msg = [0u8; SETUP_MSG_BYTES];
    crate::conn::read_exact_by(tcp, &mut msg, deadline)
        .map_err(NetError::io("reading the server's UDP port"))?;
    let port = decode_port(&msg).map_err(|e| invalid("reading the server's UDP port", e))?;
    let server = SocketAddr::new(
        tcp.peer_addr()
            .map_err(NetError::io("reading the server's address"))?
            .ip(),
        port,
    );
    let local = tcp
        .local_addr()
        .map_err(NetError::io("reading the data connection's address"))?;
    let sock = UdpSocket::bind(SocketAddr::new(local.ip(), 0))
        .map_err(NetError::io("binding a UDP data socket"))?;
    apply_udp(&sock, spec)?;
    sock.connect(server)
        .map_err(NetError::io("connecting the UDP data socket"))?;
    let hello = hello(token, flow);
    let mut ack = [0u8; SETUP_MSG_BYTES];
    let mut got = 0;
    let context = "waiting for the UDP acknowledgement";
    loop {
        let _ = sock.send(&hello);
        let round = (Instant::now() + Duration::from_millis(HELLO_REPEAT_MS)).min(deadline);
        while got < ack.len() && Instant::now() < round {
            let left = round
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            tcp.set_read_timeout(Some(left))
                .map_err(NetError::io("configuring the setup connection"))?;
            match tcp.read(&mut ack[got..]) {
                Ok(0) => {
                    return Err(NetError::io(context)(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed",
                    )))
                }
                Ok(n) => got += n,
                Err(e) if crate::conn::is_timeout(&e) => {}
                Err(e) => return Err(NetError::io(context)(e)),
            }
        }
        if got == ack.len() {
            break;
        }
        if Instant::now() >= deadline {
            return Err(NetError::io(context)(io::Error::new(
                io::ErrorKind::TimedOut,
                "the server never saw our UDP hello (is UDP blocked between the hosts?)",
            )));
        }
    }
    decode_ack(&ack).map_err(|e| invalid(context, e))?;
    let _ = tcp.set_read_timeout(None);
    Ok((sock, server))
}
