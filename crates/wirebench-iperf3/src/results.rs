//! The results message both ends send after `EXCHANGE_RESULTS` (client first).
//!
//! Each side reports its own CPU use and, per stream, what it moved: a sending stream the
//! bytes it sent after the omit period, a receiving stream the bytes it received after it.
//! The peer prints its "sender"/"receiver" line for a stream from these figures, with
//! `end_time - start_time` as the duration.

use serde_json::{Map, Value};

use crate::wire::{json_int, ProtoError};

/// One stream's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResult {
    /// Stream ID (1, 3, 4, …).
    pub id: u32,
    /// Bytes sent (a sending stream) or received (a receiving stream) after the omit period.
    pub bytes: u64,
    /// TCP retransmits of a sending stream, -1 if not known or a receiving stream.
    pub retransmits: i64,
    /// UDP receiver: jitter in seconds; otherwise 0.
    pub jitter_s: f64,
    /// UDP receiver: datagrams lost; otherwise 0.
    pub errors: i64,
    /// UDP: sender, datagrams sent; receiver, highest sequence number seen. TCP: 0.
    pub packets: i64,
    /// `errors` at the end of the omit period.
    pub omitted_errors: i64,
    /// `packets` at the end of the omit period.
    pub omitted_packets: i64,
    /// Seconds from this side's TEST_START to its start of statistics (0).
    pub start_time_s: f64,
    /// Seconds from this side's TEST_START to the end of its statistics.
    pub end_time_s: f64,
}

/// One side's results.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// CPU use of this side during the test in percent: (user + system CPU time) / wall
    /// time × 100, as iperf3 computes it for its process.
    pub cpu_util_total: f64,
    /// The user part.
    pub cpu_util_user: f64,
    /// The system part.
    pub cpu_util_system: f64,
    /// -1 if this side only received; 1 if it sent TCP with retransmit counts; else 0.
    pub sender_has_retransmits: i64,
    /// The congestion control used.
    pub congestion_used: Option<String>,
    /// Per stream.
    pub streams: Vec<StreamResult>,
    /// A server's own text output (`--get-server-output`), as sent (escape before showing).
    pub server_output_text: Option<String>,
}

fn bad(detail: String) -> ProtoError {
    ProtoError::BadJson {
        what: "results",
        detail,
    }
}

fn req_int(m: &Map<String, Value>, key: &str) -> Result<i64, ProtoError> {
    m.get(key)
        .and_then(json_int)
        .ok_or_else(|| bad(format!("`{key}` missing or not an integer")))
}

fn req_f64(m: &Map<String, Value>, key: &str) -> Result<f64, ProtoError> {
    m.get(key)
        .and_then(Value::as_f64)
        .filter(|f| f.is_finite())
        .ok_or_else(|| bad(format!("`{key}` missing or not a number")))
}

fn opt_int(m: &Map<String, Value>, key: &str) -> i64 {
    m.get(key).and_then(json_int).unwrap_or(0)
}

fn opt_f64(m: &Map<String, Value>, key: &str) -> f64 {
    m.get(key)
        .and_then(Value::as_f64)
        .filter(|f| f.is_finite())
        .unwrap_or(0.0)
}

/// Streams a results message may list (iperf3's 128 per direction, both directions).
pub const MAX_RESULT_STREAMS: usize = 256;

impl StreamResult {
    fn decode(v: &Value) -> Result<StreamResult, ProtoError> {
        let Value::Object(m) = v else {
            return Err(bad("a stream is not an object".into()));
        };
        let id = u32::try_from(req_int(m, "id")?).map_err(|_| bad("bad stream id".into()))?;
        let bytes =
            u64::try_from(req_int(m, "bytes")?).map_err(|_| bad("negative bytes".into()))?;
        Ok(StreamResult {
            id,
            bytes,
            retransmits: req_int(m, "retransmits")?,
            jitter_s: req_f64(m, "jitter")?,
            errors: req_int(m, "errors")?,
            packets: req_int(m, "packets")?,
            omitted_errors: opt_int(m, "omitted_errors"),
            omitted_packets: opt_int(m, "omitted_packets"),
            start_time_s: opt_f64(m, "start_time"),
            end_time_s: opt_f64(m, "end_time"),
        })
    }

    fn encode(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id.into());
        m.insert("bytes".into(), self.bytes.into());
        m.insert("retransmits".into(), self.retransmits.into());
        m.insert("jitter".into(), finite(self.jitter_s));
        m.insert("errors".into(), self.errors.into());
        m.insert("packets".into(), self.packets.into());
        m.insert("omitted_errors".into(), self.omitted_errors.into());
        m.insert("omitted_packets".into(), self.omitted_packets.into());
        m.insert("start_time".into(), finite(self.start_time_s));
        m.insert("end_time".into(), finite(self.end_time_s));
        Value::Object(m)
    }
}

fn finite(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::from(0), Value::Number)
}

impl Results {
    /// Read a results message (the JSON text, after its length prefix).
    pub fn decode(body: &[u8]) -> Result<Results, ProtoError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?;
        let Value::Object(m) = v else {
            return Err(bad("not a JSON object".into()));
        };
        let Some(Value::Array(streams)) = m.get("streams") else {
            return Err(bad("`streams` missing or not an array".into()));
        };
        if streams.len() > MAX_RESULT_STREAMS {
            return Err(bad(format!("{} streams listed", streams.len())));
        }
        let streams = streams
            .iter()
            .map(StreamResult::decode)
            .collect::<Result<Vec<_>, _>>()?;
        let congestion_used = match m.get("congestion_used") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let server_output_text = match (m.get("server_output_text"), m.get("server_output_json")) {
            (Some(Value::String(s)), _) => Some(s.clone()),
            (None, Some(j)) => Some(j.to_string()),
            _ => None,
        };
        Ok(Results {
            cpu_util_total: req_f64(&m, "cpu_util_total")?,
            cpu_util_user: req_f64(&m, "cpu_util_user")?,
            cpu_util_system: req_f64(&m, "cpu_util_system")?,
            sender_has_retransmits: req_int(&m, "sender_has_retransmits")?,
            congestion_used,
            streams,
            server_output_text,
        })
    }

    /// The results message (JSON text).
    pub fn encode(&self) -> String {
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), finite(self.cpu_util_total));
        m.insert("cpu_util_user".into(), finite(self.cpu_util_user));
        m.insert("cpu_util_system".into(), finite(self.cpu_util_system));
        m.insert(
            "sender_has_retransmits".into(),
            self.sender_has_retransmits.into(),
        );
        if let Some(c) = &self.congestion_used {
            m.insert("congestion_used".into(), c.clone().into());
        }
        m.insert(
            "streams".into(),
            Value::Array(self.streams.iter().map(StreamResult::encode).collect()),
        );
        if let Some(t) = &self.server_output_text {
            m.insert("server_output_text".into(), t.clone().into());
        }
        Value::Object(m).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's results of the 3.12 capture in the protocol notes (section 15).
    const SEEN_3_12: &str = r#"{"cpu_util_total":29.189028428616059,"cpu_util_user":1.6672789753202126,"cpu_util_system":27.5215995001562,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":2880569344,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.000604}]}"#;

    #[test]
    fn reads_a_3_12_message() {
        let r = Results::decode(SEEN_3_12.as_bytes()).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams.len(), 1);
        assert_eq!(r.streams[0].bytes, 2_880_569_344);
        assert_eq!(r.streams[0].retransmits, -1);
        assert!((r.streams[0].end_time_s - 2.000604).abs() < 1e-9);
        assert_eq!(Results::decode(r.encode().as_bytes()).unwrap(), r);
    }

    #[test]
    fn required_keys() {
        for key in ["cpu_util_total", "sender_has_retransmits", "streams"] {
            let mut v: Value = serde_json::from_str(SEEN_3_12).unwrap();
            v.as_object_mut().unwrap().remove(key);
            assert!(Results::decode(v.to_string().as_bytes()).is_err(), "{key}");
        }
    }
}
