//! Connection preambles, the test token, and the data-connection hello.
//!
//! Every TCP connection to the daemon starts with a 4-byte preamble saying what it is:
//! [`CONTROL_PREAMBLE`] (`WBC1`) for a control connection, which then carries frames, or
//! [`DATA_PREAMBLE`] (`WBD1`) for a data connection, which then carries a fixed 20-byte
//! [`DataHello`] (test token and flow id) and after that nothing but payload.

use std::fmt;

use thiserror::Error;

/// First four bytes of a control connection.
pub const CONTROL_PREAMBLE: [u8; 4] = *b"WBC1";
/// First four bytes of a data connection.
pub const DATA_PREAMBLE: [u8; 4] = *b"WBD1";
/// Size of a connection preamble.
pub const PREAMBLE_BYTES: usize = 4;

/// What a connection is, from its preamble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnKind {
    /// A control connection: frames follow.
    Control,
    /// A data connection: a [`DataHello`] body follows.
    Data,
}

/// A preamble that is not a wirebench one, with a guess at what the peer is.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PreambleError {
    /// The peer speaks HTTP (the preamble is a request method).
    #[error("unknown preamble {}: looks like HTTP (an HTTP request was sent to the wirebench port)", hex(.0))]
    Http([u8; 4]),
    /// The peer starts a TLS handshake.
    #[error("unknown preamble {}: looks like TLS (a TLS client hello was sent to the wirebench port)", hex(.0))]
    Tls([u8; 4]),
    /// The peer is an SSH client.
    #[error("unknown preamble {}: looks like SSH", hex(.0))]
    Ssh([u8; 4]),
    /// A wirebench preamble of another protocol version.
    #[error("unsupported wirebench preamble {} ({:?}): this build speaks version 1", hex(.0), String::from_utf8_lossy(.0))]
    OtherVersion([u8; 4]),
    /// Anything else.
    #[error("unknown preamble {}", hex(.0))]
    Unknown([u8; 4]),
}

/// Lowercase hex of a byte string.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    s
}

/// Classify a connection by its first four bytes.
pub fn classify(preamble: &[u8; 4]) -> Result<ConnKind, PreambleError> {
    const HTTP_METHODS: [&[u8; 4]; 9] = [
        b"GET ", b"POST", b"HEAD", b"PUT ", b"DELE", b"OPTI", b"PATC", b"CONN", b"PRI ",
    ];
    let p = *preamble;
    if p == CONTROL_PREAMBLE {
        Ok(ConnKind::Control)
    } else if p == DATA_PREAMBLE {
        Ok(ConnKind::Data)
    } else if HTTP_METHODS.contains(&preamble) {
        Err(PreambleError::Http(p))
    } else if p[0] == 0x16 && p[1] == 0x03 {
        Err(PreambleError::Tls(p))
    } else if &p == b"SSH-" {
        Err(PreambleError::Ssh(p))
    } else if &p[..3] == b"WBC" || &p[..3] == b"WBD" {
        Err(PreambleError::OtherVersion(p))
    } else {
        Err(PreambleError::Unknown(p))
    }
}

/// Size of a [`Token`].
pub const TOKEN_BYTES: usize = 16;

/// The per-test secret the server hands out in `accepted`; every data connection of the test
/// presents it. Compare tokens with [`Token::ct_eq`]; `Debug` does not print the secret.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token(pub [u8; TOKEN_BYTES]);

/// A token string that is not 32 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TokenError {
    /// Not 32 bytes long.
    #[error("token must be 32 hex digits, got {0} bytes")]
    Length(usize),
    /// A character that is not a hex digit.
    #[error("token has a non-hex character at position {0}")]
    NotHex(usize),
}

impl Token {
    /// The token as 32 lowercase hex digits (its form in the `accepted` message).
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parse exactly 32 lowercase hex digits (the form `accepted` carries; PROTOCOL.md).
    pub fn from_hex(s: &str) -> Result<Token, TokenError> {
        fn digit(b: u8) -> Option<u8> {
            match b {
                b'0'..=b'9' => Some(b - b'0'),
                b'a'..=b'f' => Some(b - b'a' + 10),
                _ => None,
            }
        }
        let bytes = s.as_bytes();
        if bytes.len() != TOKEN_BYTES * 2 {
            return Err(TokenError::Length(bytes.len()));
        }
        let mut out = [0u8; TOKEN_BYTES];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let hi = digit(pair[0]).ok_or(TokenError::NotHex(2 * i))?;
            let lo = digit(pair[1]).ok_or(TokenError::NotHex(2 * i + 1))?;
            out[i] = hi << 4 | lo;
        }
        Ok(Token(out))
    }

    /// Constant-time comparison: looks at every byte whatever the first difference.
    pub fn ct_eq(&self, other: &Token) -> bool {
        let mut diff = 0u8;
        for (a, b) in self.0.iter().zip(other.0.iter()) {
            diff |= a ^ b;
        }
        std::hint::black_box(diff) == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

/// Size of a [`DataHello`] body (after the preamble): token then flow id.
pub const DATA_HELLO_BYTES: usize = TOKEN_BYTES + 4;

/// The first bytes of a data connection after [`DATA_PREAMBLE`]: which test (by token) and
/// which flow it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHello {
    /// The test's token, from `accepted`.
    pub token: Token,
    /// Flow id, 0-based, as in `TestSpec::flow_dirs`.
    pub flow: u32,
}

/// A data hello body of the wrong size.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DataHelloError {
    /// The body is not exactly [`DATA_HELLO_BYTES`] long.
    #[error("data hello must be {DATA_HELLO_BYTES} bytes after the preamble, got {0}")]
    Length(usize),
}

impl DataHello {
    /// The preamble and body, ready to write: 24 bytes.
    pub fn encode(&self) -> [u8; PREAMBLE_BYTES + DATA_HELLO_BYTES] {
        let mut out = [0u8; PREAMBLE_BYTES + DATA_HELLO_BYTES];
        out[..PREAMBLE_BYTES].copy_from_slice(&DATA_PREAMBLE);
        out[PREAMBLE_BYTES..PREAMBLE_BYTES + TOKEN_BYTES].copy_from_slice(&self.token.0);
        out[PREAMBLE_BYTES + TOKEN_BYTES..].copy_from_slice(&self.flow.to_be_bytes());
        out
    }

    /// Decode the body that follows [`DATA_PREAMBLE`]; exactly [`DATA_HELLO_BYTES`] bytes.
    pub fn decode_body(bytes: &[u8]) -> Result<DataHello, DataHelloError> {
        if bytes.len() != DATA_HELLO_BYTES {
            return Err(DataHelloError::Length(bytes.len()));
        }
        let mut token = [0u8; TOKEN_BYTES];
        token.copy_from_slice(&bytes[..TOKEN_BYTES]);
        let mut flow = [0u8; 4];
        flow.copy_from_slice(&bytes[TOKEN_BYTES..]);
        Ok(DataHello {
            token: Token(token),
            flow: u32::from_be_bytes(flow),
        })
    }
}
