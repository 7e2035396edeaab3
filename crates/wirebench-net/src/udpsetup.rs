//! Binding UDP data sockets to an admitted test (UDP stream and UDP RR).
//!
//! Each UDP flow first opens an ordinary TCP data connection (preamble + data hello with the
//! test's token), which proves it belongs to the test. Over that connection:
//!
//! 1. the server binds a UDP socket on the address the connection arrived at, port 0, and
//!    writes `"WBUP"` + its port (u16, big-endian) + 2 zero bytes;
//! 2. the client binds a UDP socket on its side's address, connects it to that port and sends
//!    the same 24-byte data hello (token, flow) as a datagram, repeating it every 200 ms until
//!    answered;
//! 3. the server takes the first datagram that is exactly that hello as the flow's UDP peer
//!    (so the address the client's datagrams really arrive from, NAT included) and writes
//!    `"WBUA"` + 4 zero bytes;
//! 4. the client reads the acknowledgement.
//!
//! Every wait is bounded by one deadline. Afterwards the TCP connection stays open and idle
//! until the test ends. A socket that **sends** on a flow is connected to the peer; a socket
//! that **receives** stays unconnected and the engine counts datagrams from any other source
//! as invalid (`foreign_source`) instead of letting the kernel drop them unseen. A UDP RR
//! server socket is connected to its client, so it never answers anybody else.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_proto::data::{DataHello, Token, DATA_HELLO_BYTES};
use wirebench_proto::spec::TestSpec;

use crate::NetError;

const PORT_MAGIC: &[u8; 4] = b"WBUP";
const ACK_MAGIC: &[u8; 4] = b"WBUA";
const HELLO_REPEAT: Duration = Duration::from_millis(200);

/// Apply the spec's socket buffer request to a UDP socket.
pub fn apply_udp(sock: &UdpSocket, spec: &TestSpec) -> Result<(), NetError> {
    if let Some(w) = spec.window_bytes {
        let s = SockRef::from(sock);
        s.set_send_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_SNDBUF {w}: {e}")))?;
        s.set_recv_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_RCVBUF {w}: {e}")))?;
    }
    Ok(())
}

/// Server side of one flow's setup over its TCP data connection `tcp`. Returns the UDP socket
/// (unconnected) and the client's UDP address.
pub fn server_side(
    tcp: &mut TcpStream,
    token: Token,
    flow: u32,
    spec: &TestSpec,
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
    let mut msg = [0u8; 8];
    msg[..4].copy_from_slice(PORT_MAGIC);
    msg[4..6].copy_from_slice(&port.to_be_bytes());
    tcp.set_write_timeout(Some(Duration::from_secs(2)))
        .and_then(|()| tcp.write_all(&msg))
        .map_err(NetError::io("sending the UDP port"))?;
    let expected = DataHello { token, flow }.encode();
    let mut buf = [0u8; DATA_HELLO_BYTES + 8];
    let peer = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(NetError::io("waiting for the client's UDP hello")(
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no UDP hello arrived (is UDP blocked between the hosts?)",
                ),
            ));
        }
        sock.set_read_timeout(Some(left))
            .map_err(NetError::io("configuring the UDP socket"))?;
        match sock.recv_from(&mut buf) {
            Ok((n, from)) if buf.get(..n) == Some(&expected[..]) => break from,
            Ok(_) => {}
            Err(e) if crate::conn::is_timeout(&e) => {}
            Err(e) => return Err(NetError::io("waiting for the client's UDP hello")(e)),
        }
    };
    // Repeated hellos already queued are not the test's data: drop them now.
    let _ = sock.set_nonblocking(true);
    while let Ok((n, from)) = sock.recv_from(&mut buf) {
        if from != peer || buf.get(..n) != Some(&expected[..]) {
            break;
        }
    }
    let _ = sock.set_nonblocking(false);
    let mut ack = [0u8; 8];
    ack[..4].copy_from_slice(ACK_MAGIC);
    tcp.write_all(&ack)
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
    let mut msg = [0u8; 8];
    crate::conn::read_exact_by(tcp, &mut msg, deadline)
        .map_err(NetError::io("reading the server's UDP port"))?;
    if &msg[..4] != PORT_MAGIC {
        return Err(NetError::io("reading the server's UDP port")(
            io::Error::new(io::ErrorKind::InvalidData, "the server sent no UDP port"),
        ));
    }
    let port = u16::from_be_bytes([msg[4], msg[5]]);
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
    let hello = DataHello { token, flow }.encode();
    let mut ack = [0u8; 8];
    let mut got = 0;
    loop {
        let _ = sock.send(&hello);
        let round = (Instant::now() + HELLO_REPEAT).min(deadline);
        while got < ack.len() && Instant::now() < round {
            let left = round
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            tcp.set_read_timeout(Some(left))
                .map_err(NetError::io("configuring the setup connection"))?;
            match tcp.read(&mut ack[got..]) {
                Ok(0) => {
                    return Err(NetError::io("waiting for the UDP acknowledgement")(
                        io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed"),
                    ))
                }
                Ok(n) => got += n,
                Err(e) if crate::conn::is_timeout(&e) => {}
                Err(e) => return Err(NetError::io("waiting for the UDP acknowledgement")(e)),
            }
        }
        if got == ack.len() {
            break;
        }
        if Instant::now() >= deadline {
            return Err(NetError::io("waiting for the UDP acknowledgement")(
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the server never saw our UDP hello (is UDP blocked between the hosts?)",
                ),
            ));
        }
    }
    if &ack[..4] != ACK_MAGIC {
        return Err(NetError::io("waiting for the UDP acknowledgement")(
            io::Error::new(io::ErrorKind::InvalidData, "unexpected acknowledgement"),
        ));
    }
    let _ = tcp.set_read_timeout(None);
    Ok((sock, server))
}
