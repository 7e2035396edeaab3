//! An iperf3 test in wirebench's terms and back: the parameters as a [`TestSpec`] (checked
//! against the daemon's limits like any native spec), and the server end's [`SideReport`]
//! as iperf3's results message.

use wirebench_iperf3::params::{Direction as IDirection, Params, Protocol};
use wirebench_iperf3::results::{Results, StreamResult};
use wirebench_iperf3::wire::ErrorCode;
use wirebench_model::side::{Role, SideReport, Span};
use wirebench_model::spec::{
    Direction, Limits, StreamSpec, TcpOptions, TestSpec, UdpStreamSpec, WorkloadSpec,
};
use wirebench_model::udp::UdpSide;
use wirebench_model::validate::{LimitName, SpecField, SpecProblem};

/// Why an iperf3 test is refused: the code the iperf3 client is sent and what the daemon
/// logs.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Refusal {
    pub(super) code: ErrorCode,
    pub(super) why: String,
}

fn refuse(code: ErrorCode, why: impl Into<String>) -> Refusal {
    Refusal {
        code,
        why: why.into(),
    }
}

/// The spec of an iperf3 test, validated against `limits`.
///
/// `-t` is the duration and `-O` the warm-up (omitted seconds are outside the window at
/// both ends, as in iperf3); `-n` and `-k` become a byte count (`-k` blocks × `-l`) with the
/// longest duration the daemon allows as the bound; `-t 0` (unlimited) gets that bound too.
pub(super) fn spec_of(p: &Params, limits: &Limits) -> Result<TestSpec, Refusal> {
    if p.has_authtoken {
        return Err(refuse(
            ErrorCode::AuthTest,
            "iperf3 RSA authentication (--username) is not supported by wirebench",
        ));
    }
    if p.protocol == Protocol::Sctp {
        return Err(refuse(
            ErrorCode::RecvParams,
            "iperf3 SCTP tests are not served",
        ));
    }
    if let Some(code) = p.block_size_problem() {
        return Err(refuse(code, format!("block size {} B", p.len_bytes)));
    }
    let stop_after_bytes = if p.num_bytes > 0 {
        Some(p.num_bytes)
    } else if p.blockcount > 0 {
        Some(p.blockcount.saturating_mul(u64::from(p.len_bytes)))
    } else {
        None
    };
    let duration_ms = if stop_after_bytes.is_some() || p.time_s == 0 {
        limits.max_duration_ms
    } else {
        u64::from(p.time_s) * 1000
    };
    let direction = match p.direction {
        IDirection::Forward => Direction::Forward,
        IDirection::Reverse => Direction::Reverse,
        IDirection::Bidir => Direction::Bidir,
    };
    let workload = if p.protocol == Protocol::Udp {
        udp_workload(p, direction, stop_after_bytes.is_some())?
    } else {
        tcp_workload(p, direction, stop_after_bytes)
    };
    let mut spec = TestSpec::new(workload);
    spec.common.flows = p.parallel;
    spec.common.duration_ms = duration_ms;
    spec.common.warmup_ms = u64::from(p.omit_s) * 1000;
    spec.common.window_bytes = p.window_bytes;
    spec.common.tos = p.tos;
    spec.validate(limits).map_err(|e| {
        let code = match (e.field, &e.problem) {
            (SpecField::Flows, _) => ErrorCode::NumStreams,
            (SpecField::DurationMs, _) => ErrorCode::MaxDuration,
            (_, SpecProblem::RateRequired { .. })
            | (
                _,
                SpecProblem::OutOfRange {
                    limit: Some(LimitName::MaxRate),
                    ..
                },
            ) => ErrorCode::TotalRate,
            (SpecField::SendSizeBytes | SpecField::RecvSizeBytes, _) => ErrorCode::BlockSize,
            (SpecField::DatagramBytes, _) => ErrorCode::UdpBlockSize,
            _ => ErrorCode::RecvParams,
        };
        refuse(code, e.to_string())
    })?;
    Ok(spec)
}

/// The UDP stream of `-u`: `-l` is the datagram size and `-b` each stream's rate (0:
/// unpaced). Refused: omitted seconds (`-O`), and a byte or block count or `-t 0`: iperf3's
/// datagrams carry the client's own clock, so the daemon cannot place the omitted seconds,
/// and its UDP engine ends at its duration, not at a count.
fn udp_workload(p: &Params, direction: Direction, counted: bool) -> Result<WorkloadSpec, Refusal> {
    if p.omit_s > 0 {
        return Err(refuse(
            ErrorCode::RecvParams,
            "iperf3 UDP tests with omitted seconds (-O) are not served",
        ));
    }
    if counted || p.time_s == 0 {
        return Err(refuse(
            ErrorCode::RecvParams,
            "iperf3 UDP tests need a duration (-t); -n, -k and -t 0 are not served",
        ));
    }
    Ok(WorkloadSpec::UdpStream(UdpStreamSpec {
        direction,
        datagram_bytes: p.len_bytes,
        rate_bps: (p.bandwidth_bps > 0).then_some(p.bandwidth_bps),
    }))
}

/// The TCP stream of an iperf3 test.
fn tcp_workload(p: &Params, direction: Direction, stop_after_bytes: Option<u64>) -> WorkloadSpec {
    WorkloadSpec::Stream(StreamSpec {
        direction,
        send_size_bytes: p.len_bytes,
        recv_size_bytes: p.len_bytes,
        rate_bps: (p.bandwidth_bps > 0).then_some(p.bandwidth_bps),
        send_path: if p.zerocopy {
            wirebench_model::spec::SendPath::Sendfile
        } else {
            wirebench_model::spec::SendPath::Copy
        },
        tcp: TcpOptions {
            congestion: p.congestion.clone(),
            nodelay: p.nodelay,
            mss_bytes: p.mss_bytes,
            notsent_lowat_bytes: None,
        },
        stop_after_bytes,
        ..StreamSpec::default()
    })
}

/// Nanoseconds as iperf3's seconds.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The server's results message from its end's report: per stream the bytes it moved in its
/// window (after the omitted seconds), with the window's edges as `start_time`/`end_time` on
/// the clock that started at TEST_START, so the client divides by the server's own window;
/// a sending stream's retransmits from TCP_INFO; CPU as the data threads' CPU time over the
/// window (iperf3 counts its process; wirebench's data threads do all of this end's work).
/// A UDP test's streams as [`udp_streams`] says; `client` is the client's results message.
pub(crate) fn results_of(report: Option<&SideReport>, client: Option<&Results>) -> Results {
    let mut r = Results {
        cpu_util_total: 0.0,
        cpu_util_user: 0.0,
        cpu_util_system: 0.0,
        sender_has_retransmits: -1,
        congestion_used: None,
        streams: Vec::new(),
        server_output_text: None,
    };
    let Some(report) = report else {
        return r;
    };
    if let Some(cpu) = &report.cpu {
        let win = cpu.window.len_ns().max(1) as f64;
        r.cpu_util_user = cpu.threads_user_ns as f64 / win * 100.0;
        r.cpu_util_system = cpu.threads_system_ns as f64 / win * 100.0;
        r.cpu_util_total = r.cpu_util_user + r.cpu_util_system;
    }
    if let Some(u) = report.udp() {
        let window = report.window.unwrap_or_default();
        r.streams = udp_streams(u, window, client);
        if !u.senders.is_empty() {
            // A UDP sender has no retransmits to report (iperf3 sends 0).
            r.sender_has_retransmits = 0;
        }
        return r;
    }
    let Some(stream) = report.stream() else {
        return r;
    };
    for f in &stream.flows {
        let sender = f.role == Role::Sender;
        let retransmits = match (&f.socket.tcp_info, sender) {
            (Some(t), true) => i64::from(t.retransmits_total),
            _ => -1,
        };
        if sender {
            r.sender_has_retransmits = 1;
        }
        if r.congestion_used.is_none() {
            r.congestion_used = f.socket.congestion.clone();
        }
        r.streams.push(StreamResult {
            id: Params::stream_id(f.flow),
            bytes: f.window_bytes,
            retransmits,
            jitter_s: 0.0,
            errors: 0,
            packets: 0,
            omitted_errors: 0,
            omitted_packets: 0,
            start_time_s: secs(f.window.start_ns),
            end_time_s: secs(f.window.end_ns),
        });
    }
    r.streams.sort_by_key(|s| s.id);
    r
}

/// The streams of a UDP test, with `window` (this end's measurement window) as each
/// stream's time:
/// - a stream this end received: `bytes` of the distinct datagrams; `packets` the datagrams
///   the client says it sent (`client`'s `packets` for the stream id), at least the highest
///   sequence number seen; `errors` = `packets` − distinct datagrams received (duplicates
///   and reordering make up for nothing); `jitter` RFC 3550's, in seconds;
/// - a stream this end sent: `bytes` sent; `packets` the sequence numbers used (datagrams
///   sent, plus sends the kernel refused or that failed, which the client sees as lost).
fn udp_streams(u: &UdpSide, window: Span, client: Option<&Results>) -> Vec<StreamResult> {
    let client_packets = |id: u32| {
        client
            .and_then(|c| c.streams.iter().find(|s| s.id == id))
            .map_or(0, |s| u64::try_from(s.packets).unwrap_or(0))
    };
    let stream = |id, bytes, jitter_s, errors: u64, packets: u64| StreamResult {
        id,
        bytes,
        retransmits: -1,
        jitter_s,
        errors: i64::try_from(errors).unwrap_or(i64::MAX),
        packets: i64::try_from(packets).unwrap_or(i64::MAX),
        omitted_errors: 0,
        omitted_packets: 0,
        start_time_s: secs(window.start_ns),
        end_time_s: secs(window.end_ns),
    };
    let mut out = Vec::new();
    for rx in &u.receivers {
        let id = Params::stream_id(rx.flow);
        let seq_end = rx.highest_seq.map_or(0, |h| h.saturating_add(1));
        let packets = client_packets(id).max(seq_end);
        let lost = packets.saturating_sub(rx.datagrams_received);
        out.push(stream(
            id,
            rx.bytes_received,
            rx.jitter_ns / 1e9,
            lost,
            packets,
        ));
    }
    for tx in &u.senders {
        let used = tx
            .datagrams_sent
            .saturating_add(tx.send_refused)
            .saturating_add(tx.send_errors);
        out.push(stream(
            Params::stream_id(tx.flow),
            tx.bytes_sent,
            0.0,
            0,
            used,
        ));
    }
    out.sort_by_key(|s| s.id);
    out
}

/// The text a client asked for with `--get-server-output`: one line per stream of what the
/// server measured, in iperf3's units (bytes, seconds, bit/s).
pub(super) fn server_output(test_id: u64, r: &Results) -> String {
    let mut s = format!("wirebench {} test {test_id}\n", env!("CARGO_PKG_VERSION"));
    for st in &r.streams {
        let secs = (st.end_time_s - st.start_time_s).max(1e-9);
        s.push_str(&format!(
            "[{:>3}] {:.2}-{:.2} sec {} bytes {:.0} bits/sec retransmits {}\n",
            st.id,
            st.start_time_s,
            st.end_time_s,
            st.bytes,
            st.bytes as f64 * 8.0 / secs,
            st.retransmits
        ));
    }
    s.push_str(&format!(
        "CPU (data threads) {:.1}% (user {:.1}%, system {:.1}%)\n",
        r.cpu_util_total, r.cpu_util_user, r.cpu_util_system
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(json: &str) -> Params {
        Params::decode(json.as_bytes()).unwrap()
    }

    #[test]
    fn a_default_client_is_a_ten_second_stream() {
        let s = spec_of(&params("{}"), &Limits::default()).unwrap();
        assert_eq!(s.common.duration_ms, 10_000);
        assert_eq!(s.common.flows, 1);
        assert_eq!(s.direction(), Direction::Forward);
    }

    #[test]
    fn policy_limits_apply() {
        let limits = Limits {
            max_flows: 4,
            max_duration_ms: 5_000,
            max_rate_bps: Some(1_000_000_000),
            ..Limits::default()
        };
        let code = |j: &str| spec_of(&params(j), &limits).map(|_| ()).map_err(|r| r.code);
        assert_eq!(
            code(r#"{"parallel":5,"time":1,"bandwidth":1000}"#),
            Err(ErrorCode::NumStreams)
        );
        assert_eq!(
            code(r#"{"time":6,"bandwidth":1000}"#),
            Err(ErrorCode::MaxDuration)
        );
        assert_eq!(
            code(r#"{"time":1,"authtoken":"x"}"#),
            Err(ErrorCode::AuthTest)
        );
        assert_eq!(
            code(r#"{"udp":true,"time":1,"omit":1,"bandwidth":1000,"len":1400}"#),
            Err(ErrorCode::RecvParams),
            "-u with -O"
        );
        assert_eq!(
            code(r#"{"udp":true,"time":0,"num":1000,"bandwidth":1000,"len":1400}"#),
            Err(ErrorCode::RecvParams),
            "-u with -n"
        );
        assert_eq!(
            code(r#"{"udp":true,"time":1,"bandwidth":1000,"len":20}"#),
            Err(ErrorCode::UdpBlockSize),
            "a datagram shorter than wirebench's smallest"
        );
        assert_eq!(
            code(r#"{"udp":true,"time":1,"bandwidth":1000000,"len":1400}"#),
            Ok(())
        );
        assert_eq!(
            code(r#"{"time":1}"#),
            Err(ErrorCode::TotalRate),
            "no rate under --max-rate"
        );
        assert_eq!(code(r#"{"time":1,"bandwidth":1000000}"#), Ok(()));
    }

    #[test]
    fn bytes_and_blocks_become_a_count() {
        let l = Limits::default();
        let s = spec_of(&params(r#"{"time":0,"num":1000000}"#), &l).unwrap();
        assert_eq!(s.common.duration_ms, l.max_duration_ms);
        let WorkloadSpec::Stream(st) = &s.workload else {
            panic!()
        };
        assert_eq!(st.stop_after_bytes, Some(1_000_000));
        let s = spec_of(&params(r#"{"time":0,"blockcount":10,"len":1000}"#), &l).unwrap();
        let WorkloadSpec::Stream(st) = &s.workload else {
            panic!()
        };
        assert_eq!(st.stop_after_bytes, Some(10_000));
    }
}
