//! Client authentication: HMAC-SHA256 challenge-response over a fresh server nonce.
//!
//! # Scheme
//! 1. The server's `welcome` carries a fresh 32-byte random nonce (a new one on every control
//!    connection), its own identity, and whether it requires authentication.
//! 2. The client's `test` carries its identity and
//!    `mac = HMAC-SHA256(key, "wirebench-auth-v1" ‖ nonce ‖ len ‖ client identity ‖ len ‖
//!    server identity ‖ SHA-256(TestSpec as JSON))`, lengths as 4-byte big-endian. The spec's
//!    JSON is the canonical serde_json encoding of the parsed [`TestSpec`] (field order fixed
//!    by the type), so client and server hash the same bytes.
//! 3. The server looks the identity up in its key table and compares MACs in constant time.
//!
//! A captured handshake cannot be replayed: the next connection gets another nonce. The spec
//! cannot be altered in flight: its digest is under the MAC. Every failure — unknown
//! identity, wrong key, malformed or oversized identity or MAC — gives the same
//! [`AuthError::Failed`], and an unknown identity is checked against a dummy key so that it
//! takes as long as a wrong key. The server is not authenticated to the client (the client
//! chose the address); the data connections are bound to the test by its random token.
//!
//! # Key file
//! One `IDENTITY KEY` pair per line; `KEY` is hex, 16 to 128 bytes (32 to 256 hex digits).
//! Blank lines and lines starting with `#` are ignored. Identities are 1 to 64 characters of
//! `[A-Za-z0-9._@-]` and appear once. `wirebench keygen NAME` prints such a line.

use std::collections::HashMap;
use std::fmt;

use hmac::{Hmac, Mac};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use wirebench_model::spec::TestSpec;

/// Bytes of a server nonce.
pub const NONCE_BYTES: usize = 32;
/// Bytes of a MAC (HMAC-SHA256).
pub const MAC_BYTES: usize = 32;
/// Shortest key accepted, bytes.
pub const MIN_KEY_BYTES: usize = 16;
/// Longest key accepted, bytes.
pub const MAX_KEY_BYTES: usize = 128;
/// Longest identity, bytes.
pub const MAX_IDENTITY_BYTES: usize = 64;

const DOMAIN: &[u8] = b"wirebench-auth-v1";

type HmacSha256 = Hmac<Sha256>;

/// A server nonce.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Nonce(pub [u8; NONCE_BYTES]);

impl Nonce {
    /// Lowercase hex, as carried in `welcome.nonce`.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parse 64 hex digits.
    pub fn from_hex(s: &str) -> Option<Nonce> {
        let mut out = [0u8; NONCE_BYTES];
        unhex_into(s, &mut out).then_some(Nonce(out))
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nonce({})", self.to_hex())
    }
}

/// A shared secret. Its `Debug` output does not show the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(Vec<u8>);

impl Key {
    /// Parse a hex key of [`MIN_KEY_BYTES`]..=[`MAX_KEY_BYTES`] bytes (surrounding whitespace
    /// ignored).
    pub fn from_hex(s: &str) -> Result<Key, String> {
        let s = s.trim();
        if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("the key is not an even number of hex digits".into());
        }
        let n = s.len() / 2;
        if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&n) {
            return Err(format!(
                "the key is {n} bytes; {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes \
                 ({} to {} hex digits) are accepted",
                MIN_KEY_BYTES * 2,
                MAX_KEY_BYTES * 2
            ));
        }
        let mut out = vec![0u8; n];
        if !unhex_into(s, &mut out) {
            return Err("the key is not hex".into());
        }
        Ok(Key(out))
    }

    /// Wrap raw key bytes (e.g. freshly generated ones).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Key, String> {
        if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&bytes.len()) {
            return Err(format!(
                "keys are {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes, not {}",
                bytes.len()
            ));
        }
        Ok(Key(bytes))
    }

    /// Lowercase hex (for `wirebench keygen`).
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({} bytes)", self.0.len())
    }
}

/// What a client sends inside its `test` message to prove who it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthProof {
    /// The client's identity, as in the server's key file.
    pub identity: String,
    /// HMAC-SHA256 over the nonce, both identities and the spec digest: 64 hex digits.
    pub mac: String,
}

/// Authentication failed. Deliberately one variant with one text: the client learns nothing
/// about which part was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthError {
    /// Unknown identity, wrong key, malformed proof, or no proof where one is required.
    #[error("authentication failed")]
    Failed,
}

/// A line of a key file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {reason}")]
pub struct KeyFileError {
    /// 1-based line number (0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Is `s` an acceptable identity: 1 to 64 characters of `[A-Za-z0-9._@-]`?
pub fn valid_identity(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_IDENTITY_BYTES
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
}

/// The server's table of identities and keys.
#[derive(Clone, Default)]
pub struct KeyTable {
    keys: HashMap<String, Key>,
}

impl fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyTable({} identities)", self.keys.len())
    }
}

impl KeyTable {
    /// Parse a key file's text. An empty table (no keys at all) is an error too: a server
    /// asked to authenticate with nobody allowed in is a configuration mistake.
    pub fn parse(text: &str) -> Result<KeyTable, KeyFileError> {
        let mut keys = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let l = raw.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let mut parts = l.split_whitespace();
            let (Some(id), Some(key), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(KeyFileError {
                    line,
                    reason: "expected `IDENTITY HEX-KEY`".into(),
                });
            };
            if !valid_identity(id) {
                return Err(KeyFileError {
                    line,
                    reason: format!(
                        "identity must be 1 to {MAX_IDENTITY_BYTES} characters of [A-Za-z0-9._@-]"
                    ),
                });
            }
            let key = Key::from_hex(key).map_err(|reason| KeyFileError { line, reason })?;
            if keys.insert(id.to_string(), key).is_some() {
                return Err(KeyFileError {
                    line,
                    reason: format!("identity {id} appears twice"),
                });
            }
        }
        if keys.is_empty() {
            return Err(KeyFileError {
                line: 0,
                reason: "no keys in the file".into(),
            });
        }
        Ok(KeyTable { keys })
    }

    /// The key of `identity`, if any (client side: pick one's own key out of a key file).
    pub fn get(&self, identity: &str) -> Option<&Key> {
        self.keys.get(identity)
    }

    /// Number of identities.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No identities (never true for a parsed table).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Check a client's proof for `spec` under `nonce`. Returns the authenticated identity.
    /// Constant time in the MAC comparison; an unknown identity costs the same HMAC as a
    /// known one.
    pub fn verify(
        &self,
        proof: Option<&AuthProof>,
        nonce: &Nonce,
        server_identity: &str,
        spec: &TestSpec,
    ) -> Result<String, AuthError> {
        let Some(proof) = proof else {
            return Err(AuthError::Failed);
        };
        let dummy = Key(vec![0x5a; 32]);
        let known = self.keys.get(&proof.identity);
        let key = known.unwrap_or(&dummy);
        let mut mac = [0u8; MAC_BYTES];
        let well_formed = unhex_into(&proof.mac, &mut mac);
        let digest = spec_digest(spec);
        let m = keyed(key, nonce, &proof.identity, server_identity, &digest);
        let matches = m.verify_slice(&mac).is_ok();
        if matches && well_formed && known.is_some() {
            Ok(proof.identity.clone())
        } else {
            Err(AuthError::Failed)
        }
    }
}

/// What a ticket request's proof is bound to besides the spec (see [`bound_identity`]).
pub const TICKET_CONTEXT: &str = "ticket";

/// What a third-party request's proof is bound to besides the spec: the target and the
/// ticket, so that neither can be changed in flight.
pub fn third_party_context(target: &str, ticket: &str) -> String {
    format!("third-party {target} {ticket}")
}

/// The server identity a proof covers: the server's own identity for a `test` (`context`
/// empty), else that identity, a newline and the request's context — a proof made for one
/// kind of request does not verify as another.
pub fn bound_identity(server_identity: &str, context: &str) -> String {
    if context.is_empty() {
        server_identity.to_string()
    } else {
        format!("{server_identity}\n{context}")
    }
}

/// SHA-256 of the canonical JSON of `spec`.
pub fn spec_digest(spec: &TestSpec) -> [u8; 32] {
    // Serializing a plain struct of numbers, strings and enums cannot fail.
    let json = serde_json::to_vec(spec).unwrap_or_default();
    Sha256::digest(&json).into()
}

fn keyed(
    key: &Key,
    nonce: &Nonce,
    client_identity: &str,
    server_identity: &str,
    digest: &[u8; 32],
) -> HmacSha256 {
    // HMAC accepts keys of any length.
    let mut m = <HmacSha256 as Mac>::new_from_slice(&key.0).unwrap_or_else(|_| {
        <HmacSha256 as Mac>::new_from_slice(&[0u8; 32]).expect("HMAC takes any key length")
    });
    m.update(DOMAIN);
    m.update(&nonce.0);
    for part in [client_identity.as_bytes(), server_identity.as_bytes()] {
        m.update(&(part.len() as u32).to_be_bytes());
        m.update(part);
    }
    m.update(digest);
    m
}

/// The client's proof for `spec` under the server's `nonce`.
pub fn prove(
    key: &Key,
    nonce: &Nonce,
    client_identity: &str,
    server_identity: &str,
    spec: &TestSpec,
) -> AuthProof {
    let digest = spec_digest(spec);
    let mac = keyed(key, nonce, client_identity, server_identity, &digest)
        .finalize()
        .into_bytes();
    AuthProof {
        identity: client_identity.to_string(),
        mac: hex(&mac),
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Decode exactly `out.len()` bytes of hex; false (and `out` unspecified) otherwise.
fn unhex_into(s: &str, out: &mut [u8]) -> bool {
    let b = s.as_bytes();
    if b.len() != out.len() * 2 {
        return false;
    }
    fn val(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
        match (val(pair[0]), val(pair[1])) {
            (Some(h), Some(l)) => *o = h << 4 | l,
            _ => return false,
        }
    }
    true
}
