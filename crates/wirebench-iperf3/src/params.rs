//! The parameters message (client to server, after `PARAM_EXCHANGE`), read the way every
//! iperf3 server reads it, and written the way a client must write it.
//!
//! Traps handled here:
//! - booleans (`udp`, `reverse`, `bidirectional`, `nodelay`, `get_server_output`,
//!   `udp_counters_64bit`, `zerocopy` …) count by **presence**: `"reverse": false` means a
//!   reverse test (seen with 3.12 and 3.21+), so a writer leaves such keys out to mean "off";
//! - integers may arrive as unsigned 64-bit renderings of negative numbers (≤ 3.13);
//! - a missing key leaves iperf3's default (TCP, 10 s, one stream, 128 KiB blocks).

use serde_json::{Map, Value};

use crate::wire::{json_int, ProtoError};

/// The data protocol of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// TCP streams.
    Tcp,
    /// UDP streams.
    Udp,
    /// SCTP streams (not served).
    Sctp,
}

/// Which way the payload moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server (the default).
    Forward,
    /// Server to client (`-R`).
    Reverse,
    /// Both (`--bidir`): the first `parallel` streams carry client-to-server data.
    Bidir,
}

/// Streams per direction iperf3 allows at most.
pub const MAX_PARALLEL: u32 = 128;

/// The largest TCP block iperf3 (HEAD) allows.
pub const MAX_TCP_BLOCK_BYTES: u32 = 1 << 20;

/// The UDP block size range.
pub const UDP_BLOCK_BYTES: std::ops::RangeInclusive<u32> = 16..=65_507;

/// A test's parameters, typed. Defaults are iperf3's for a missing key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Data protocol.
    pub protocol: Protocol,
    /// Direction.
    pub direction: Direction,
    /// Seconds left out of the statistics at the start (`-O`).
    pub omit_s: u32,
    /// Test duration (`-t`); 0 with `-n`/`-k` or an unlimited test.
    pub time_s: u32,
    /// Bytes to send (`-n`), 0 if unset.
    pub num_bytes: u64,
    /// Blocks to send (`-k`), 0 if unset.
    pub blockcount: u64,
    /// Streams per direction (`-P`).
    pub parallel: u32,
    /// Block size: TCP read/write size or UDP datagram size (`-l`).
    pub len_bytes: u32,
    /// Target rate per stream in bit/s (`-b`), 0 for unlimited.
    pub bandwidth_bps: u64,
    /// Socket buffer size for the data sockets (`-w`).
    pub window_bytes: Option<u32>,
    /// TCP_MAXSEG for the data sockets (`-M`).
    pub mss_bytes: Option<u32>,
    /// TCP_NODELAY on the data sockets (`-N`).
    pub nodelay: bool,
    /// Congestion control for the data sockets (`-C`).
    pub congestion: Option<String>,
    /// IP TOS for the data sockets.
    pub tos: Option<u8>,
    /// The client wants the server's output in its results (`--get-server-output`).
    pub get_server_output: bool,
    /// 64-bit UDP sequence numbers (`--udp-counters-64bit`).
    pub udp_counters_64bit: bool,
    /// The server should send with zero copy (`-Z`).
    pub zerocopy: bool,
    /// The client sent an RSA authentication token.
    pub has_authtoken: bool,
    /// The client's version string, as sent (unescaped: escape before showing).
    pub client_version: Option<String>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            protocol: Protocol::Tcp,
            direction: Direction::Forward,
            omit_s: 0,
            time_s: 10,
            num_bytes: 0,
            blockcount: 0,
            parallel: 1,
            len_bytes: 128 * 1024,
            bandwidth_bps: 0,
            window_bytes: None,
            mss_bytes: None,
            nodelay: false,
            congestion: None,
            tos: None,
            get_server_output: false,
            udp_counters_64bit: false,
            zerocopy: false,
            has_authtoken: false,
            client_version: None,
        }
    }
}

/// Longest string value kept from the parameters (congestion names are ≤ 16 bytes).
const MAX_STRING_BYTES: usize = 64;

fn bad(detail: String) -> ProtoError {
    ProtoError::BadJson {
        what: "parameters",
        detail,
    }
}

fn int(m: &Map<String, Value>, key: &str) -> Result<Option<i64>, ProtoError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => json_int(v)
            .map(Some)
            .ok_or_else(|| bad(format!("`{key}` is not an integer"))),
    }
}

fn ranged<T: TryFrom<i64>>(
    m: &Map<String, Value>,
    key: &str,
    lo: i64,
    hi: i64,
) -> Result<Option<T>, ProtoError> {
    match int(m, key)? {
        None => Ok(None),
        Some(v) if v < lo || v > hi => Err(bad(format!("`{key}` = {v} is outside {lo}..={hi}"))),
        Some(v) => T::try_from(v)
            .map(Some)
            .map_err(|_| bad(format!("`{key}` out of range"))),
    }
}

fn string(m: &Map<String, Value>, key: &str) -> Result<Option<String>, ProtoError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= MAX_STRING_BYTES => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(bad(format!("`{key}` is too long"))),
        Some(_) => Err(bad(format!("`{key}` is not a string"))),
    }
}

impl Params {
    /// Read a parameters message (the JSON text, after its length prefix).
    pub fn decode(body: &[u8]) -> Result<Params, ProtoError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?;
        let Value::Object(m) = v else {
            return Err(bad("not a JSON object".into()));
        };
        let has = |k: &str| m.contains_key(k);
        let d = Params::default();
        let protocol = if has("udp") {
            Protocol::Udp
        } else if has("sctp") {
            Protocol::Sctp
        } else {
            Protocol::Tcp
        };
        let direction = if has("bidirectional") {
            Direction::Bidir
        } else if has("reverse") {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        let u32max = i64::from(u32::MAX);
        let congestion = string(&m, "congestion")?;
        if let Some(c) = &congestion {
            if c.is_empty() || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(bad("`congestion` is not an algorithm name".into()));
            }
        }
        Ok(Params {
            protocol,
            direction,
            omit_s: ranged(&m, "omit", 0, u32max)?.unwrap_or(d.omit_s),
            time_s: ranged(&m, "time", 0, u32max)?.unwrap_or(d.time_s),
            num_bytes: ranged(&m, "num", 0, i64::MAX)?.unwrap_or(0),
            blockcount: ranged(&m, "blockcount", 0, i64::MAX)?.unwrap_or(0),
            parallel: ranged(&m, "parallel", 1, i64::from(MAX_PARALLEL))?.unwrap_or(d.parallel),
            len_bytes: ranged(&m, "len", 1, u32max)?.unwrap_or(d.len_bytes),
            bandwidth_bps: ranged(&m, "bandwidth", 0, i64::MAX)?.unwrap_or(0),
            window_bytes: ranged(&m, "window", 1, i64::from(i32::MAX))?,
            mss_bytes: ranged(&m, "MSS", 1, u32max)?,
            nodelay: has("nodelay"),
            congestion,
            tos: ranged(&m, "TOS", 0, 255)?,
            get_server_output: has("get_server_output"),
            udp_counters_64bit: has("udp_counters_64bit"),
            zerocopy: has("zerocopy"),
            has_authtoken: has("authtoken"),
            client_version: string(&m, "client_version")?,
        })
    }

    /// The parameters message a client sends (JSON text). Keys that count by presence are
    /// left out when off; `len`, `parallel` and `time` are always sent, and `bandwidth`
    /// always for UDP (a UDP test without it would be unthrottled in reverse).
    pub fn encode(&self) -> String {
        let mut m = Map::new();
        let t = Value::Bool(true);
        match self.protocol {
            Protocol::Tcp => m.insert("tcp".into(), t.clone()),
            Protocol::Udp => m.insert("udp".into(), t.clone()),
            Protocol::Sctp => m.insert("sctp".into(), t.clone()),
        };
        m.insert("omit".into(), self.omit_s.into());
        m.insert("time".into(), self.time_s.into());
        m.insert("num".into(), self.num_bytes.into());
        m.insert("blockcount".into(), self.blockcount.into());
        m.insert("parallel".into(), self.parallel.into());
        match self.direction {
            Direction::Forward => {}
            Direction::Reverse => {
                m.insert("reverse".into(), t.clone());
            }
            Direction::Bidir => {
                m.insert("bidirectional".into(), t.clone());
            }
        }
        if let Some(w) = self.window_bytes {
            m.insert("window".into(), w.into());
        }
        if let Some(s) = self.mss_bytes {
            m.insert("MSS".into(), s.into());
        }
        if self.nodelay {
            m.insert("nodelay".into(), t.clone());
        }
        m.insert("len".into(), self.len_bytes.into());
        if self.bandwidth_bps > 0 || self.protocol == Protocol::Udp {
            m.insert("bandwidth".into(), self.bandwidth_bps.into());
        }
        if let Some(c) = &self.congestion {
            m.insert("congestion".into(), c.clone().into());
        }
        if let Some(tos) = self.tos {
            m.insert("TOS".into(), tos.into());
        }
        for (on, key) in [
            (self.get_server_output, "get_server_output"),
            (self.udp_counters_64bit, "udp_counters_64bit"),
            (self.zerocopy, "zerocopy"),
        ] {
            if on {
                m.insert(key.into(), 1.into());
            }
        }
        m.insert("pacing_timer".into(), 1000.into());
        if let Some(v) = &self.client_version {
            m.insert("client_version".into(), v.clone().into());
        }
        Value::Object(m).to_string()
    }

    /// Data streams the client opens: `parallel`, twice that for `--bidir`.
    pub fn stream_count(&self) -> u32 {
        match self.direction {
            Direction::Bidir => self.parallel.saturating_mul(2),
            _ => self.parallel,
        }
    }

    /// The stream ID of the `index`-th stream (0-based) in creation order: 1, 3, 4, 5, …
    /// (iperf3 never uses 2).
    pub fn stream_id(index: u32) -> u32 {
        if index == 0 {
            1
        } else {
            index.saturating_add(2)
        }
    }

    /// Block size out of iperf3's range for the protocol: the `SERVER_ERROR` code a current
    /// iperf3 server would answer.
    pub fn block_size_problem(&self) -> Option<crate::wire::ErrorCode> {
        match self.protocol {
            Protocol::Udp if !UDP_BLOCK_BYTES.contains(&self.len_bytes) => {
                Some(crate::wire::ErrorCode::UdpBlockSize)
            }
            Protocol::Tcp if self.len_bytes > MAX_TCP_BLOCK_BYTES => {
                Some(crate::wire::ErrorCode::BlockSize)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stock_3_12_message() {
        let p = Params::decode(
            br#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#,
        )
        .unwrap();
        assert_eq!(p.protocol, Protocol::Tcp);
        assert_eq!(p.time_s, 2);
        assert_eq!(p.len_bytes, 131_072);
        assert_eq!(p.direction, Direction::Forward);
        assert_eq!(p.client_version.as_deref(), Some("3.12"));
    }

    #[test]
    fn presence_means_true() {
        let p = Params::decode(br#"{"reverse":false,"udp":false,"get_server_output":0}"#).unwrap();
        assert_eq!(p.direction, Direction::Reverse);
        assert_eq!(p.protocol, Protocol::Udp);
        assert!(p.get_server_output);
    }

    #[test]
    fn refusals() {
        for bad in [
            &br#"[1]"#[..],
            br#"{"parallel":0}"#,
            br#"{"parallel":129}"#,
            br#"{"parallel":"2"}"#,
            br#"{"time":-1}"#,
            br#"{"congestion":"a b"}"#,
            br#"{"len":18446744073709551615}"#,
            b"{",
        ] {
            assert!(
                Params::decode(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn encode_then_decode_is_identity() {
        let p = Params {
            protocol: Protocol::Udp,
            direction: Direction::Bidir,
            parallel: 3,
            bandwidth_bps: 5_000_000_000,
            window_bytes: Some(1 << 20),
            congestion: Some("cubic".into()),
            get_server_output: true,
            client_version: Some("wirebench".into()),
            ..Params::default()
        };
        assert_eq!(Params::decode(p.encode().as_bytes()).unwrap(), p);
        assert_eq!(p.stream_count(), 6);
        assert_eq!(
            (0..4).map(Params::stream_id).collect::<Vec<_>>(),
            [1, 3, 4, 5]
        );
    }
}
