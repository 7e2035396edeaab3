//! Binding a flow's UDP socket to an admitted test (UDP stream and UDP RR): the messages, with
//! no I/O. The shell (`wirebench-net`) does the socket work.
//!
//! Each UDP flow first opens an ordinary TCP data connection (preamble + data hello with the
//! test's token), which proves it belongs to the test. Over that connection:
//!
//! 1. the server binds a UDP socket on the address the connection arrived at, port 0, and
//!    writes [`PortMsg`]: `"WBUP"`, its port (u16, big-endian), 2 zero bytes;
//! 2. the client binds a UDP socket on its side's address, connects it to that port and sends
//!    the same 24-byte data hello (preamble included) (token, flow) as a datagram, repeating it every
//!    [`HELLO_REPEAT_MS`] until answered;
//! 3. the server takes the first datagram that is exactly that hello **and comes from the
//!    control connection's host** ([`same_host`]) as the flow's UDP peer, and writes the
//!    acknowledgement `"WBUA"` + 4 zero bytes ([`ACK`]); a hello from any other address is
//!    ignored, so the daemon can never be made to send datagrams to a third party;
//! 4. the client reads the acknowledgement.
//!
//! Both messages are exactly [`SETUP_MSG_BYTES`] long; [`decode_port`] and [`decode_ack`]
//! accept nothing else (the padding must be zero).

use std::net::IpAddr;

use thiserror::Error;

use crate::data::{DataHello, Token, DATA_HELLO_BYTES, PREAMBLE_BYTES};

/// Size of each setup message.
pub const SETUP_MSG_BYTES: usize = 8;
/// Magic of the server's port message.
pub const PORT_MAGIC: [u8; 4] = *b"WBUP";
/// Magic of the server's acknowledgement.
pub const ACK_MAGIC: [u8; 4] = *b"WBUA";
/// The acknowledgement, whole.
pub const ACK: [u8; SETUP_MSG_BYTES] = [b'W', b'B', b'U', b'A', 0, 0, 0, 0];
/// How often the client repeats its UDP hello until acknowledged, milliseconds.
pub const HELLO_REPEAT_MS: u64 = 200;

/// A setup message that is not what the protocol allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum UdpSetupError {
    /// The message does not start with the expected magic.
    #[error("expected {expected:?}, got bytes {got:02x?}")]
    BadMagic {
        /// The magic expected.
        expected: [u8; 4],
        /// The first four bytes received.
        got: [u8; 4],
    },
    /// Padding bytes that must be zero are not.
    #[error("nonzero padding in a UDP setup message")]
    BadPadding,
    /// The port message names port 0.
    #[error("the server's UDP port is 0")]
    ZeroPort,
}

/// The server's port message.
pub fn encode_port(port: u16) -> [u8; SETUP_MSG_BYTES] {
    let [hi, lo] = port.to_be_bytes();
    let [a, b, c, d] = PORT_MAGIC;
    [a, b, c, d, hi, lo, 0, 0]
}

/// Decode the server's port message.
///
/// # Errors
///
/// Wrong magic, nonzero padding, or port 0.
pub fn decode_port(msg: &[u8; SETUP_MSG_BYTES]) -> Result<u16, UdpSetupError> {
    let [a, b, c, d, hi, lo, p0, p1] = *msg;
    if [a, b, c, d] != PORT_MAGIC {
        return Err(UdpSetupError::BadMagic {
            expected: PORT_MAGIC,
            got: [a, b, c, d],
        });
    }
    if p0 != 0 || p1 != 0 {
        return Err(UdpSetupError::BadPadding);
    }
    match u16::from_be_bytes([hi, lo]) {
        0 => Err(UdpSetupError::ZeroPort),
        port => Ok(port),
    }
}

/// Decode the server's acknowledgement.
///
/// # Errors
///
/// Anything but exactly [`ACK`].
pub fn decode_ack(msg: &[u8; SETUP_MSG_BYTES]) -> Result<(), UdpSetupError> {
    let [a, b, c, d, rest @ ..] = *msg;
    if [a, b, c, d] != ACK_MAGIC {
        return Err(UdpSetupError::BadMagic {
            expected: ACK_MAGIC,
            got: [a, b, c, d],
        });
    }
    if rest != [0; 4] {
        return Err(UdpSetupError::BadPadding);
    }
    Ok(())
}

/// The client's UDP hello datagram for `flow` of the test with `token`.
pub fn hello(token: Token, flow: u32) -> [u8; PREAMBLE_BYTES + DATA_HELLO_BYTES] {
    DataHello { token, flow }.encode()
}

/// True if `datagram` is exactly the UDP hello of `flow` of the test with `token`.
pub fn is_hello(datagram: &[u8], token: Token, flow: u32) -> bool {
    datagram == hello(token, flow)
}

/// True if `a` and `b` are the same host address, treating an IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`) as the IPv4 address it maps.
pub fn same_host(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

/// Fuzz target body: decode `data` as either message and as a hello; must never panic, and
/// whatever decodes must re-encode to the same bytes.
pub fn fuzz_udp_setup(data: &[u8]) {
    let Some(msg) = data.first_chunk::<SETUP_MSG_BYTES>() else {
        return;
    };
    if let Ok(port) = decode_port(msg) {
        assert_eq!(&encode_port(port), msg);
    }
    if decode_ack(msg).is_ok() {
        assert_eq!(msg, &ACK);
    }
    let token = Token([7; crate::data::TOKEN_BYTES]);
    let _ = is_hello(data, token, u32::from(msg[0]));
}
