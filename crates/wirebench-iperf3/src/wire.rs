//! Encoding primitives of the iperf3 control connection: the 37-byte cookie, the one-byte
//! states, the `u32`-big-endian-length-prefixed JSON messages and the `SERVER_ERROR` payload.
//!
//! There is no framing or type tag on the control connection: each side knows what comes next
//! from its state machine ([`crate::server`]).

use thiserror::Error;

/// iperf3's default port.
pub const DEFAULT_PORT: u16 = 5201;

/// Printable characters of a cookie.
pub const COOKIE_CHARS: usize = 36;

/// Bytes of a cookie on the wire: 36 characters and a NUL.
pub const COOKIE_BYTES: usize = COOKIE_CHARS + 1;

/// Bytes of a JSON message's length prefix (`u32`, big-endian).
pub const LENGTH_PREFIX_BYTES: usize = 4;

/// Largest parameters message accepted, in bytes (iperf3 3.18 and later refuse longer ones
/// too; a stock client's parameters are about 150–400 bytes).
pub const MAX_PARAMS_BYTES: u32 = 8192;

/// Largest results message accepted from a peer for a test of `streams` streams: a fixed
/// part and room per stream (a stream's entry is under 300 bytes) plus, for a server's
/// results, its `server_output_text`/`server_output_json`, which is bounded by
/// [`MAX_SERVER_OUTPUT_BYTES`].
pub fn max_results_bytes(streams: u32, with_server_output: bool) -> u32 {
    let base = 4096u32.saturating_add(streams.saturating_mul(1024));
    if with_server_output {
        base.saturating_add(MAX_SERVER_OUTPUT_BYTES)
    } else {
        base
    }
}

/// Room for a server's own output inside its results.
pub const MAX_SERVER_OUTPUT_BYTES: u32 = 1 << 20;

/// The characters iperf3 builds cookies from.
pub const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// What went wrong with bytes a peer sent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtoError {
    /// The cookie's 37th byte is not NUL or a character is outside `[a-z0-9]`.
    #[error("malformed cookie (36 characters from [a-z0-9] and a NUL expected)")]
    BadCookie,
    /// A JSON message announced more bytes than allowed.
    #[error("{what} of {len} bytes is over the limit of {cap} bytes")]
    TooLong {
        /// Which message.
        what: &'static str,
        /// Its announced length.
        len: u32,
        /// The cap.
        cap: u32,
    },
    /// A byte that is no iperf3 state.
    #[error("unknown iperf3 state byte 0x{0:02x}")]
    UnknownState(u8),
    /// A state that may not arrive at this point.
    #[error("iperf3 state {got:?} not expected while {phase}")]
    UnexpectedState {
        /// What arrived.
        got: State,
        /// What the receiver was doing.
        phase: &'static str,
    },
    /// Bytes where none may arrive.
    #[error("unexpected bytes while {0}")]
    UnexpectedBytes(&'static str),
    /// A message that is not JSON, or not the expected JSON.
    #[error("bad {what}: {detail}")]
    BadJson {
        /// Which message.
        what: &'static str,
        /// Why.
        detail: String,
    },
    /// A deadline passed.
    #[error("timed out while {0}")]
    Timeout(&'static str),
    /// The peer sent bytes after it should have stopped.
    #[error("the state machine was used out of order: {0}")]
    Misuse(&'static str),
    /// The peer closed the connection.
    #[error("the server closed the control connection while {0}")]
    PeerClosed(&'static str),
}

/// A test's cookie: 36 characters that name the test on every connection of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie(pub [u8; COOKIE_CHARS]);

impl Cookie {
    /// Decode the 37 bytes of a cookie.
    pub fn decode(b: &[u8; COOKIE_BYTES]) -> Result<Cookie, ProtoError> {
        if b[COOKIE_CHARS] != 0 {
            return Err(ProtoError::BadCookie);
        }
        let mut c = [0u8; COOKIE_CHARS];
        c.copy_from_slice(&b[..COOKIE_CHARS]);
        if !c
            .iter()
            .all(|x| x.is_ascii_lowercase() || x.is_ascii_digit())
        {
            return Err(ProtoError::BadCookie);
        }
        Ok(Cookie(c))
    }

    /// A cookie from 36 random bytes (each mapped into iperf3's alphabet).
    pub fn from_random(r: [u8; COOKIE_CHARS]) -> Cookie {
        Cookie(r.map(|x| COOKIE_ALPHABET[usize::from(x) % COOKIE_ALPHABET.len()]))
    }

    /// The 37 bytes on the wire.
    pub fn encode(&self) -> [u8; COOKIE_BYTES] {
        let mut b = [0u8; COOKIE_BYTES];
        b[..COOKIE_CHARS].copy_from_slice(&self.0);
        b
    }

    /// The characters (always ASCII).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

/// The state bytes of the control connection (signed: `0xff` is -1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Server to client: every data stream is accepted.
    TestStart,
    /// Server to client: the data may flow.
    TestRunning,
    /// Client to server: the client's test is over.
    TestEnd,
    /// Server to client: the cookie was read; send the parameters.
    ParamExchange,
    /// Server to client: the parameters are accepted; open the data streams.
    CreateStreams,
    /// Server to client: the server is exiting.
    ServerTerminate,
    /// Client to server: the client was interrupted.
    ClientTerminate,
    /// Server to client: send your results, then read mine.
    ExchangeResults,
    /// Server to client: the results are exchanged.
    DisplayResults,
    /// Client to server: the last byte of a test.
    IperfDone,
    /// Server to client: busy, or a data connection with a foreign cookie.
    AccessDenied,
    /// Server to client: an error, followed by its codes.
    ServerError,
}

impl State {
    /// The byte on the wire.
    pub fn byte(self) -> u8 {
        let v: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        v as u8
    }

    /// The state a byte names.
    pub fn from_byte(b: u8) -> Result<State, ProtoError> {
        Ok(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return Err(ProtoError::UnknownState(b)),
        })
    }
}

/// iperf3 error codes (`i_errno`) a server sends after `SERVER_ERROR`; the numbers are the
/// same in every version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// 6: bad parallel stream count.
    NumStreams,
    /// 7: block size out of range.
    BlockSize,
    /// 20: bad UDP block size.
    UdpBlockSize,
    /// 27: over the server's total rate limit.
    TotalRate,
    /// 37: longer than the server allows.
    MaxDuration,
    /// 106: the cookie did not arrive.
    RecvCookie,
    /// 114: the parameters did not arrive or are bad.
    RecvParams,
    /// 117: the results did not arrive or are bad.
    RecvResults,
    /// 142: authentication failed (or is not offered).
    AuthTest,
    /// 202: the server cannot listen for the data streams.
    StreamListen,
}

impl ErrorCode {
    /// The number on the wire.
    pub fn code(self) -> i32 {
        match self {
            ErrorCode::NumStreams => 6,
            ErrorCode::BlockSize => 7,
            ErrorCode::UdpBlockSize => 20,
            ErrorCode::TotalRate => 27,
            ErrorCode::MaxDuration => 37,
            ErrorCode::RecvCookie => 106,
            ErrorCode::RecvParams => 114,
            ErrorCode::RecvResults => 117,
            ErrorCode::AuthTest => 142,
            ErrorCode::StreamListen => 202,
        }
    }
}

/// `SERVER_ERROR`, the code, and an errno (0 here: the refusals are policy, not OS errors).
pub fn encode_server_error(code: ErrorCode) -> [u8; 9] {
    let mut b = [0u8; 9];
    b[0] = State::ServerError.byte();
    b[1..5].copy_from_slice(&code.code().to_be_bytes());
    b
}

/// The length of a JSON message from its prefix, refused above `cap` before anything is
/// allocated for it.
pub fn json_length(
    prefix: [u8; LENGTH_PREFIX_BYTES],
    cap: u32,
    what: &'static str,
) -> Result<usize, ProtoError> {
    let len = u32::from_be_bytes(prefix);
    if len > cap {
        return Err(ProtoError::TooLong { what, len, cap });
    }
    Ok(len as usize)
}

/// A JSON message on the wire: the big-endian length, then the text.
pub fn encode_json(text: &str) -> Vec<u8> {
    let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
    let mut b = Vec::with_capacity(LENGTH_PREFIX_BYTES + text.len());
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(text.as_bytes());
    b
}

/// Reads a JSON number the way iperf3's peers print integers: a value of 2^63 or more is a
/// negative number printed as unsigned 64-bit (iperf3 ≤ 3.13 prints -1 as
/// 18446744073709551615). Floats with an integral value are accepted too.
pub fn json_int(v: &serde_json::Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    if let Some(u) = v.as_u64() {
        return Some(u as i64);
    }
    let f = v.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_are_signed() {
        for b in 0..=255u8 {
            if let Ok(s) = State::from_byte(b) {
                assert_eq!(s.byte(), b);
            }
        }
        assert_eq!(State::AccessDenied.byte(), 0xff);
        assert_eq!(State::ServerError.byte(), 0xfe);
        assert_eq!(State::from_byte(3), Err(ProtoError::UnknownState(3)));
    }

    #[test]
    fn the_length_is_checked_before_allocation() {
        assert_eq!(json_length([0, 0, 0x20, 0], 8192, "p"), Ok(8192));
        assert!(matches!(
            json_length([0xff, 0xff, 0xff, 0xff], 8192, "p"),
            Err(ProtoError::TooLong { len: u32::MAX, .. })
        ));
    }

    #[test]
    fn minus_one_printed_unsigned_is_minus_one() {
        let v: serde_json::Value = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(json_int(&v), Some(-1));
        let v: serde_json::Value = serde_json::from_str("2.0").unwrap();
        assert_eq!(json_int(&v), Some(2));
        let v: serde_json::Value = serde_json::from_str("2.5").unwrap();
        assert_eq!(json_int(&v), None);
    }

    #[test]
    fn cookies() {
        let c = Cookie::from_random([200; COOKIE_CHARS]);
        assert_eq!(Cookie::decode(&c.encode()), Ok(c));
        let mut b = c.encode();
        b[36] = b'x';
        assert_eq!(Cookie::decode(&b), Err(ProtoError::BadCookie));
        let mut b = c.encode();
        b[3] = b'\n';
        assert_eq!(Cookie::decode(&b), Err(ProtoError::BadCookie));
    }
}
