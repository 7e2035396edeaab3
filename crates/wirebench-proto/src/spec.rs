//! [`TestSpec`]: one serde type that describes a whole test, and its server-side validation.
//!
//! The client sends exactly one `TestSpec`; the server checks every field against its own
//! [`Limits`] before admitting the test. Nothing is negotiated field by field.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Most interval samples (intervals × connections) one test may produce, so that the results
/// message stays under the absolute frame cap.
pub const MAX_INTERVAL_SAMPLES: u64 = 500_000;

/// Largest sum of per-connection message buffers (message size × connections) one test may
/// make an end allocate.
pub const MAX_TOTAL_MSG_BUFFER_BYTES: u64 = 512 * 1024 * 1024;

/// Slowest per-flow rate a spec may ask for, bits per second.
pub const MIN_RATE_BPS: u64 = 1_000;
/// Fastest per-flow rate a spec may ask for, bits per second (10 Tbit/s).
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;

/// Which family of test to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// Bulk TCP transfer (netperf TCP_STREAM / iperf3 default).
    Stream,
}

/// Which way data moves, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The client sends, the server receives.
    Forward,
    /// The server sends, the client receives.
    Reverse,
    /// Both at once: `flows` flows each way.
    Bidir,
}

/// Which way one flow's payload moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowDir {
    /// Client writes, server reads.
    ClientToServer,
    /// Server writes, client reads.
    ServerToClient,
}

/// A complete description of one test. Durations are in milliseconds, sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// Test family.
    pub workload: Workload,
    /// Data direction.
    pub direction: Direction,
    /// Parallel flows per direction (bidir opens twice this many connections).
    pub flows: u32,
    /// Measured duration after warm-up, in milliseconds.
    pub duration_ms: u64,
    /// Warm-up before the measurement window opens, in milliseconds (excluded from results).
    pub warmup_ms: u64,
    /// Live interval length in milliseconds; `None` for no interval samples.
    pub interval_ms: Option<u64>,
    /// Bytes per send/receive call.
    pub msg_size_bytes: u32,
    /// SO_SNDBUF and SO_RCVBUF requested on both ends; `None` leaves kernel autotuning on.
    pub window_bytes: Option<u32>,
    /// TCP congestion control for every data connection; `None` uses each host's default.
    pub congestion: Option<String>,
    /// Set TCP_NODELAY on data connections.
    pub nodelay: bool,
    /// Target payload rate of each flow, bits per second (10^0-based), paced by the sender;
    /// `None` sends as fast as the path allows.
    pub rate_bps: Option<u64>,
    /// CPU to pin the server's data threads to; `None` leaves placement to the scheduler.
    pub server_cpu: Option<u32>,
    /// CPU the client pins its own data threads to; carried so that the result records the
    /// whole placement (the server only checks its range).
    pub client_cpu: Option<u32>,
}

impl TestSpec {
    /// A forward stream test with the defaults of `wirebench stream`.
    pub fn stream_default() -> Self {
        TestSpec {
            workload: Workload::Stream,
            direction: Direction::Forward,
            flows: 1,
            duration_ms: 10_000,
            warmup_ms: 0,
            interval_ms: None,
            msg_size_bytes: 128 * 1024,
            window_bytes: None,
            congestion: None,
            nodelay: false,
            rate_bps: None,
            server_cpu: None,
            client_cpu: None,
        }
    }

    /// The flows of this test, in flow-id order, with the direction each one carries.
    pub fn flow_dirs(&self) -> Vec<FlowDir> {
        let n = self.flows as usize;
        match self.direction {
            Direction::Forward => vec![FlowDir::ClientToServer; n],
            Direction::Reverse => vec![FlowDir::ServerToClient; n],
            Direction::Bidir => {
                let mut v = vec![FlowDir::ClientToServer; n];
                v.extend(std::iter::repeat_n(FlowDir::ServerToClient, n));
                v
            }
        }
    }

    /// Number of data connections the test opens.
    pub fn connection_count(&self) -> u32 {
        match self.direction {
            Direction::Bidir => self.flows.saturating_mul(2),
            _ => self.flows,
        }
    }

    /// Check every field against `limits`. The server calls this on every spec it receives,
    /// whatever the client checked.
    pub fn validate(&self, limits: &Limits) -> Result<(), SpecError> {
        fn range<T: PartialOrd + Copy + std::fmt::Display>(
            field: &'static str,
            v: T,
            min: T,
            max: T,
        ) -> Result<(), SpecError> {
            if v < min || v > max {
                return Err(SpecError::OutOfRange {
                    field,
                    value: v.to_string(),
                    min: min.to_string(),
                    max: max.to_string(),
                });
            }
            Ok(())
        }
        range("flows", self.flows, 1, limits.max_flows)?;
        range("duration_ms", self.duration_ms, 100, limits.max_duration_ms)?;
        range("warmup_ms", self.warmup_ms, 0, limits.max_warmup_ms)?;
        if self.warmup_ms > self.duration_ms {
            return Err(SpecError::Inconsistent {
                field: "warmup_ms",
                reason: "warm-up may not be longer than the measured duration".into(),
            });
        }
        if let Some(i) = self.interval_ms {
            range("interval_ms", i, 100, self.duration_ms.max(100))?;
            // Results carry every interval sample of every flow; keep them sendable.
            let samples = (self.duration_ms.saturating_add(self.warmup_ms) / i.max(1))
                .saturating_add(2)
                .saturating_mul(u64::from(self.connection_count()));
            if samples > MAX_INTERVAL_SAMPLES {
                return Err(SpecError::Inconsistent {
                    field: "interval_ms",
                    reason: format!(
                        "{samples} interval samples (intervals x connections) exceed \
                         {MAX_INTERVAL_SAMPLES}; use a longer interval"
                    ),
                });
            }
        }
        range(
            "msg_size_bytes",
            self.msg_size_bytes,
            1,
            limits.max_msg_size_bytes,
        )?;
        // Every connection gets a message-sized buffer at each end: bound their sum.
        let buffers =
            u64::from(self.msg_size_bytes).saturating_mul(u64::from(self.connection_count()));
        if buffers > MAX_TOTAL_MSG_BUFFER_BYTES {
            return Err(SpecError::Inconsistent {
                field: "msg_size_bytes",
                reason: format!(
                    "{buffers} bytes of message buffers (message size x connections) exceed \
                     {MAX_TOTAL_MSG_BUFFER_BYTES}"
                ),
            });
        }
        if let Some(w) = self.window_bytes {
            range("window_bytes", w, 2048, limits.max_window_bytes)?;
        }
        if let Some(cc) = &self.congestion {
            let ok = !cc.is_empty()
                && cc.len() <= 15
                && cc.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                });
            if !ok {
                return Err(SpecError::Invalid {
                    field: "congestion",
                    reason: "must be 1-15 characters of [a-z0-9_-]".into(),
                });
            }
        }
        if let Some(r) = self.rate_bps {
            range("rate_bps", r, MIN_RATE_BPS, MAX_RATE_BPS)?;
        }
        if let Some(max) = limits.max_rate_bps {
            // The policy bounds the test's aggregate: every connection's rate together.
            let total = self
                .rate_bps
                .map(|r| r.saturating_mul(u64::from(self.connection_count())));
            match total {
                None => {
                    return Err(SpecError::Invalid {
                        field: "rate_bps",
                        reason: format!(
                            "this server allows at most {max} bit/s per test; set a rate \
                             (per flow) so that rate x connections stays under it"
                        ),
                    })
                }
                Some(t) if t > max => {
                    return Err(SpecError::OutOfRange {
                        field: "rate_bps",
                        value: format!("{t} (rate x connections)"),
                        min: MIN_RATE_BPS.to_string(),
                        max: max.to_string(),
                    })
                }
                Some(_) => {}
            }
        }
        if let Some(cpu) = self.server_cpu {
            range("server_cpu", cpu, 0, 4095)?;
        }
        if let Some(cpu) = self.client_cpu {
            range("client_cpu", cpu, 0, 4095)?;
        }
        Ok(())
    }
}

/// The server's policy limits. Every field has a safe default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Largest `flows` accepted.
    pub max_flows: u32,
    /// Longest measured duration, milliseconds.
    pub max_duration_ms: u64,
    /// Longest warm-up, milliseconds.
    pub max_warmup_ms: u64,
    /// Largest message size, bytes.
    pub max_msg_size_bytes: u32,
    /// Largest socket buffer request, bytes.
    pub max_window_bytes: u32,
    /// Tests that may run at once.
    pub max_concurrent_tests: u32,
    /// Largest aggregate payload rate of one test (rate x connections), bits per second;
    /// `None` for no limit. When set, tests must ask for a rate, and the server aborts a test
    /// whose data arrives faster than allowed.
    #[serde(default)]
    pub max_rate_bps: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_flows: 128,
            max_duration_ms: 3_600_000,
            max_warmup_ms: 600_000,
            max_msg_size_bytes: 16 * 1024 * 1024,
            max_window_bytes: 256 * 1024 * 1024,
            max_concurrent_tests: 4,
            max_rate_bps: None,
        }
    }
}

/// Why a [`TestSpec`] was refused. Each variant names the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// A numeric field outside the server's limits.
    #[error("{field} = {value} is out of range (allowed {min}..={max})")]
    OutOfRange {
        /// Field name as in the wire format.
        field: &'static str,
        /// Value received.
        value: String,
        /// Smallest allowed value.
        min: String,
        /// Largest allowed value.
        max: String,
    },
    /// A field whose value is malformed.
    #[error("{field} is invalid: {reason}")]
    Invalid {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Fields that contradict each other.
    #[error("{field} is inconsistent: {reason}")]
    Inconsistent {
        /// Field name.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        TestSpec::stream_default()
            .validate(&Limits::default())
            .unwrap();
    }

    #[test]
    fn out_of_range_names_field() {
        let mut s = TestSpec::stream_default();
        s.flows = 0;
        let e = s.validate(&Limits::default()).unwrap_err();
        assert!(e.to_string().starts_with("flows = 0"), "{e}");
        s.flows = 1_000_000_000;
        assert!(s.validate(&Limits::default()).is_err());
        let mut s = TestSpec::stream_default();
        s.warmup_ms = s.duration_ms + 1;
        assert!(matches!(
            s.validate(&Limits::default()),
            Err(SpecError::Inconsistent {
                field: "warmup_ms",
                ..
            })
        ));
        let mut s = TestSpec::stream_default();
        s.interval_ms = Some(0);
        assert!(s.validate(&Limits::default()).is_err());
        let mut s = TestSpec::stream_default();
        s.msg_size_bytes = 0;
        assert!(s.validate(&Limits::default()).is_err());
        let mut s = TestSpec::stream_default();
        s.congestion = Some("../../etc".into());
        assert!(s.validate(&Limits::default()).is_err());
        // 16 MiB messages on 128 flows each way would be 4 GiB of buffers.
        let mut s = TestSpec::stream_default();
        s.direction = Direction::Bidir;
        s.flows = 128;
        s.msg_size_bytes = 16 << 20;
        assert!(matches!(
            s.validate(&Limits::default()),
            Err(SpecError::Inconsistent {
                field: "msg_size_bytes",
                ..
            })
        ));
    }

    #[test]
    fn bidir_has_both_directions() {
        let mut s = TestSpec::stream_default();
        s.direction = Direction::Bidir;
        s.flows = 2;
        assert_eq!(
            s.flow_dirs(),
            vec![
                FlowDir::ClientToServer,
                FlowDir::ClientToServer,
                FlowDir::ServerToClient,
                FlowDir::ServerToClient
            ]
        );
        assert_eq!(s.connection_count(), 4);
    }
}
