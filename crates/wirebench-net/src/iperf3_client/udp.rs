//! A UDP stream as an iperf3 client sets it up: its own socket connected to the server's
//! iperf3 port, one connect datagram ("9876"), and the server's reply ("6789", or the value of
//! iperf3 ≤ 3.11) on it before the next stream. The server tells the streams apart by their
//! source port, so each has its own socket, kept for the whole test (reverse: the server
//! sends to it).
//!
//! iperf3's client sends the connect datagram once and waits 30 s. This end sends it again
//! each [`RESEND_EVERY`] until the reply comes or the handshake deadline passes, so a lost
//! datagram costs a second, not the test: a repeated one reaches the stream's connected
//! socket at the server, which ignores datagrams before the test runs.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use wirebench_iperf3::udp::{CONNECT, LEGACY_REPLY, REPLY};

use crate::client::{ClientConfig, Origin};
use crate::udpsetup::apply_udp;
use crate::NetError;

/// How often the connect datagram is sent again while no reply has come.
const RESEND_EVERY: Duration = Duration::from_secs(1);

/// Whether `b` is the server's reply to a connect datagram.
fn is_reply(b: &[u8]) -> bool {
    b == REPLY || b == LEGACY_REPLY
}

/// Set one stream up from `from`, waiting for the reply until `deadline`.
pub(super) fn connect_stream(
    cfg: &ClientConfig,
    from: Origin,
    deadline: Instant,
) -> Result<(UdpSocket, SocketAddr), NetError> {
    let server = cfg.server;
    let sock = Socket::new(
        Domain::for_address(server),
        Type::DGRAM,
        Some(Protocol::UDP),
    )
    .map_err(NetError::io("creating a UDP data socket"))?;
    from.bind(&sock)?;
    let sock: UdpSocket = sock.into();
    apply_udp(&sock, &cfg.spec)?;
    sock.connect(server).map_err(|source| NetError::Connect {
        addr: server,
        source,
    })?;
    let mut buf = [0u8; 64];
    loop {
        sock.send(&CONNECT).map_err(NetError::io(
            "sending an iperf3 UDP stream's connect datagram",
        ))?;
        let resend_at = Instant::now() + RESEND_EVERY;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(NetError::io("waiting for the iperf3 server's UDP reply")(
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no reply from {server} to a UDP stream's connect datagram"),
                    ),
                ));
            }
            if now >= resend_at {
                break;
            }
            let wait = resend_at.min(deadline) - now;
            let _ = sock.set_read_timeout(Some(wait.max(Duration::from_millis(1))));
            match sock.recv(&mut buf) {
                Ok(n) if is_reply(&buf[..n]) => {
                    let _ = sock.set_read_timeout(None);
                    return Ok((sock, server));
                }
                // Anything else (a reverse test's early data) is not the reply.
                Ok(_) => {}
                Err(e) if crate::conn::is_timeout(&e) => {}
                Err(source) => {
                    return Err(NetError::Connect {
                        addr: server,
                        source,
                    })
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_set_up_by_the_reply_and_the_connect_is_repeated() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let cfg = ClientConfig::new(addr, wirebench_model::spec::TestSpec::stream_default());
        let t = std::thread::spawn(move || {
            let mut b = [0u8; 16];
            // The first connect datagram goes unanswered; the repeat gets the reply, after
            // a datagram that is not one.
            let (n, _) = server.recv_from(&mut b).unwrap();
            assert_eq!(&b[..n], &CONNECT);
            let (n, from) = server.recv_from(&mut b).unwrap();
            assert_eq!(&b[..n], &CONNECT);
            server.send_to(b"xxxxxxxx", from).unwrap();
            server.send_to(&REPLY, from).unwrap();
        });
        let origin = Origin {
            ip: None,
            port: None,
        };
        let (s, peer) =
            connect_stream(&cfg, origin, Instant::now() + Duration::from_secs(5)).unwrap();
        assert_eq!(peer, addr);
        assert_eq!(s.peer_addr().unwrap(), addr);
        t.join().unwrap();
        // No reply: a timeout naming the server.
        let quiet = UdpSocket::bind("127.0.0.1:0").unwrap();
        let cfg = ClientConfig::new(
            quiet.local_addr().unwrap(),
            wirebench_model::spec::TestSpec::stream_default(),
        );
        let e = connect_stream(&cfg, origin, Instant::now() + Duration::from_millis(50))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no reply"), "{e}");
    }
}
