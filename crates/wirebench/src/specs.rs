//! Test specs from the client commands' flags, validated, with errors that name the flag the
//! user typed rather than the spec's field.

use wirebench_model::spec::{
    BusyPoll, CallSizes, CommonSpec, CrrSpec, Direction, Limits, RecvPath, RecvWait, RrLoop,
    RrSpec, SendPath, StreamShape, StreamSpec, TcpOptions, TestSpec, UdpRrSpec, UdpStreamSpec,
    WorkloadSpec, DEFAULT_MAX_OUTSTANDING, MIN_UDP_RR_BYTES,
};
use wirebench_model::validate::{SpecError, SpecField, SpecProblem};

use crate::args::{
    ClientArgs, CrrArgs, RecvPathArg, RecvWaitArg, RrArgs, SendPathArg, StreamArgs, UdpArgs,
};

/// A spec, or a usage error: the message and the spec field at fault.
pub type SpecResult = Result<TestSpec, (String, Option<SpecField>)>;

/// Flows per direction the client itself accepts (and its embedded server allows); a remote
/// server applies its own `--max-flows`, which the client learns from its welcome.
pub const CLIENT_MAX_FLOWS: u32 = 10_000;

/// `-t` when not given, seconds.
const DEFAULT_DURATION_S: f64 = 10.0;

/// `-t` when not given with `stream -n/-k`: the bound on a test that stops after a count.
const DEFAULT_COUNT_BOUND_S: f64 = 300.0;

/// Limits of the client's own checks and of the embedded server: the defaults, with room for
/// many-flow runs.
pub fn client_limits() -> Limits {
    Limits {
        max_flows: CLIENT_MAX_FLOWS,
        ..Limits::default()
    }
}

/// The command-line flag that sets `field`.
pub fn flag_of(field: SpecField) -> &'static str {
    match field {
        SpecField::Flows => "-P/--flows",
        SpecField::DurationMs => "-t/--duration",
        SpecField::WarmupMs => "--warmup",
        SpecField::IntervalMs => "-i/--interval",
        SpecField::WindowBytes => "-w/--window",
        SpecField::ServerCpu | SpecField::ClientCpu => "--affinity",
        SpecField::SendSizeBytes => "-l/--msg-size (--send-size)",
        SpecField::RecvSizeBytes => "-l/--msg-size (--recv-size)",
        SpecField::DatagramBytes => "-l/--msg-size",
        SpecField::RateBps => "-b/--rate",
        SpecField::Verify => "--verify",
        SpecField::Threads => "--threads",
        SpecField::Congestion => "-C/--congestion",
        SpecField::RequestSizeBytes => "--request-size",
        SpecField::ResponseSizeBytes => "--response-size",
        SpecField::Burst => "--burst",
        SpecField::TransactionsPerS => "-b/--rate",
        SpecField::MaxOutstanding => "--max-outstanding",
        SpecField::TimeoutMs => "--udp-timeout",
        SpecField::FqRateBps => "--fq-rate",
        SpecField::MssBytes => "-M/--set-mss",
        SpecField::NotsentLowatBytes => "--notsent-lowat",
        SpecField::StopAfterBytes => "-n/--bytes (-k/--blocks)",
        SpecField::ProfileHz => "--profile-hz",
        SpecField::BusyPollUs => "--busy-poll",
        SpecField::RecvWait => "--recv-wait",
        SpecField::BufferOffsetBytes => "--buffer-offset",
    }
}

fn usage(msg: String, field: SpecField) -> (String, Option<SpecField>) {
    (msg, Some(field))
}

fn ms(v: f64, field: SpecField) -> Result<u64, (String, Option<SpecField>)> {
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err(usage(
            format!("{} {v} is not a number of seconds", flag_of(field)),
            field,
        ));
    }
    Ok((v * 1000.0).round() as u64)
}

fn to_u32(v: u64, field: SpecField) -> Result<u32, (String, Option<SpecField>)> {
    u32::try_from(v).map_err(|_| usage(format!("{} {v} is too large", flag_of(field)), field))
}

/// Validate a spec built from flags (the server validates again against its own limits).
fn checked(spec: TestSpec) -> SpecResult {
    spec.validate(&client_limits())
        .map_err(|e| spec_usage(&e))?;
    Ok(spec)
}

/// How a field's numbers read to a user: milliseconds as seconds, bytes as sizes, rates as
/// bit/s.
fn in_units(field: SpecField, v: u64) -> String {
    use wirebench_report::print::units;
    match field {
        SpecField::DurationMs | SpecField::WarmupMs | SpecField::IntervalMs => {
            format!("{} s", v as f64 / 1000.0)
        }
        SpecField::TimeoutMs => format!("{v} ms"),
        SpecField::WindowBytes
        | SpecField::SendSizeBytes
        | SpecField::RecvSizeBytes
        | SpecField::DatagramBytes
        | SpecField::RequestSizeBytes
        | SpecField::ResponseSizeBytes
        | SpecField::StopAfterBytes
        | SpecField::NotsentLowatBytes => format!("{} bytes", units::size(v)),
        SpecField::RateBps | SpecField::FqRateBps => units::RateUnit::AutoBits.rate(v as f64),
        SpecField::MssBytes | SpecField::BufferOffsetBytes => format!("{v} bytes"),
        SpecField::TransactionsPerS => format!("{v} transactions/s"),
        SpecField::ProfileHz => format!("{v} Hz"),
        SpecField::BusyPollUs => format!("{v} µs"),
        SpecField::ServerCpu | SpecField::ClientCpu => format!("CPU {v}"),
        _ => v.to_string(),
    }
}

/// A refused spec field in the user's terms: the flag they typed and the unit, and who set
/// the bound (this client, or the server's own flag).
pub fn user_message(field: SpecField, problem: &SpecProblem) -> String {
    let flag = flag_of(field);
    match problem {
        SpecProblem::OutOfRange {
            value,
            min,
            max,
            limit,
        } => {
            let mut t = format!(
                "{flag} {}: must be {} to {}",
                in_units(field, *value),
                in_units(field, *min),
                in_units(field, *max)
            );
            match limit.map(|l| (l, l.flag())) {
                Some((_, Some(server_flag))) if *value > *max => {
                    t.push_str(&format!(
                        " (the server allows at most {}: `serve {server_flag}`)",
                        in_units(field, *max)
                    ));
                }
                Some((wirebench_model::validate::LimitName::ServerCpus, _)) => {
                    t.push_str(" (the CPUs the server has)");
                }
                _ => {}
            }
            t
        }
        other => format!("{flag}: {other}"),
    }
}

/// A spec error as a usage error naming the flag.
pub fn spec_usage(e: &SpecError) -> (String, Option<SpecField>) {
    (user_message(e.field, &e.problem), Some(e.field))
}

/// `--profile`'s frequency without `--profile-hz`, samples per second per CPU. Each sample
/// is a timer interrupt on the sampled CPU (a VM exit in these guests): 4 kHz cost 14 % of a
/// CPU-bound loopback stream on AMD EPYC (Zen 3) and 21 % on Intel Xeon VMs, 500 Hz 3.8 %
/// on the Xeon, 250 Hz nothing measurable (docs/PROFILE.md, "Overhead"). The default, 241 Hz,
/// is a prime just below that, out of step with the kernel's tick; it gives a 10 s test 2,410
/// samples per busy CPU.
pub const DEFAULT_PROFILE_HZ: u32 = wirebench_model::profile::DEFAULT_PROFILE_HZ;

/// The settings every client command shares.
fn common(c: &ClientArgs) -> Result<CommonSpec, (String, Option<SpecField>)> {
    common_with(c, DEFAULT_DURATION_S)
}

/// [`common`], with `default_duration_s` when `-t` is not given.
fn common_with(
    c: &ClientArgs,
    default_duration_s: f64,
) -> Result<CommonSpec, (String, Option<SpecField>)> {
    check_local_cpu(c)?;
    Ok(CommonSpec {
        flows: c.flows,
        duration_ms: ms(
            c.duration.unwrap_or(default_duration_s),
            SpecField::DurationMs,
        )?,
        warmup_ms: ms(c.warmup, SpecField::WarmupMs)?,
        // `-i 0` turns live intervals off.
        interval_ms: c
            .interval
            .filter(|&i| i != 0.0)
            .map(|i| ms(i, SpecField::IntervalMs))
            .transpose()?,
        window_bytes: c
            .window
            .map(|w| to_u32(w, SpecField::WindowBytes))
            .transpose()?,
        server_cpu: c.affinity.and_then(|x| x.1),
        client_cpu: c.affinity.and_then(|x| x.0),
        tos: c.tos.or(c.dscp),
        fq_rate_bps: c.fq_rate,
        dont_fragment: c.dont_fragment,
        profile_hz: c.profile_hz.or(c.profile.then_some(DEFAULT_PROFILE_HZ)),
        buffer_offset_bytes: c.buffer_offset,
        admission_group: None,
    })
}

/// The client's own CPU (`--affinity LOCAL,`) must be one this process may run on.
fn check_local_cpu(c: &ClientArgs) -> Result<(), (String, Option<SpecField>)> {
    let Some(cpu) = c.affinity.and_then(|a| a.0) else {
        return Ok(());
    };
    let allowed = wirebench_sys::thread::current_thread_affinity().unwrap_or_default();
    if allowed.is_empty() || allowed.contains(&(cpu as usize)) {
        return Ok(());
    }
    let list: Vec<String> = allowed.iter().map(usize::to_string).collect();
    Err(usage(
        format!(
            "--affinity {cpu},: this client may run on CPUs {} only",
            list.join(",")
        ),
        SpecField::ClientCpu,
    ))
}

/// `-C`, `-M` or `--notsent-lowat` on a UDP test: UDP has no congestion control, no segment
/// size and no send queue, so the flag would be ignored.
fn refuse_congestion_on_udp(c: &ClientArgs) -> Result<(), (String, Option<SpecField>)> {
    if let Some(cc) = &c.congestion {
        return Err(usage(
            format!("-C {cc}: UDP has no congestion control (it applies to stream, rr and crr)"),
            SpecField::Congestion,
        ));
    }
    if let Some(m) = c.mss {
        return Err(usage(
            format!("-M {m}: UDP has no segment size (it applies to stream, rr and crr)"),
            SpecField::MssBytes,
        ));
    }
    if let Some(l) = c.notsent_lowat {
        return Err(usage(
            format!(
                "--notsent-lowat {}: UDP has no send queue to hold back (it applies to stream, \
                 rr and crr)",
                in_units(SpecField::NotsentLowatBytes, l)
            ),
            SpecField::NotsentLowatBytes,
        ));
    }
    Ok(())
}

fn tcp(c: &ClientArgs, nodelay: bool) -> TcpOptions {
    TcpOptions {
        congestion: c.congestion.clone(),
        nodelay,
        mss_bytes: c.mss,
        // Above u32 is above the bound too: validation names the flag and the bound.
        notsent_lowat_bytes: c
            .notsent_lowat
            .map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
    }
}

fn direction(reverse: bool, bidir: bool) -> Direction {
    if bidir {
        Direction::Bidir
    } else if reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    }
}

fn send_path(a: &StreamArgs) -> SendPath {
    if a.sendfile {
        return SendPath::Sendfile;
    }
    match a.send_path {
        SendPathArg::Copy => SendPath::Copy,
        SendPathArg::Sendfile => SendPath::Sendfile,
        SendPathArg::Splice => SendPath::Splice,
        SendPathArg::Zerocopy => SendPath::Zerocopy,
        SendPathArg::Uring => SendPath::Uring,
        SendPathArg::UringZc => SendPath::UringZc,
    }
}

fn recv_wait(a: &StreamArgs) -> RecvWait {
    match a.recv_wait {
        RecvWaitArg::Auto => RecvWait::Auto,
        RecvWaitArg::Block => RecvWait::Block,
        RecvWaitArg::Nap => RecvWait::Nap,
        RecvWaitArg::Spin => RecvWait::Spin,
    }
}

fn recv_path(a: &StreamArgs) -> RecvPath {
    match a.recv_path {
        RecvPathArg::Copy => RecvPath::Copy,
        RecvPathArg::Discard => RecvPath::Discard,
        RecvPathArg::Splice => RecvPath::Splice,
        RecvPathArg::Zerocopy => RecvPath::Zerocopy,
        RecvPathArg::Uring => RecvPath::Uring,
    }
}

/// The spec of `wirebench stream`: the call sizes not given are [`StreamSpec::new`]'s
/// defaults (1 MiB, fewer for many flows; smaller receives for a sender that does not copy).
pub fn stream_spec(a: &StreamArgs) -> SpecResult {
    let counted = a.bytes.is_some() || a.blocks.is_some();
    let common = common_with(
        &a.c,
        if counted {
            DEFAULT_COUNT_BOUND_S
        } else {
            DEFAULT_DURATION_S
        },
    )?;
    // -l names both calls; --send-size and --recv-size one each.
    let sizes = CallSizes {
        send_bytes: a
            .send_size
            .or(a.msg_size)
            .map(|v| to_u32(v, SpecField::SendSizeBytes))
            .transpose()?,
        recv_bytes: a
            .recv_size
            .or(a.msg_size)
            .map(|v| to_u32(v, SpecField::RecvSizeBytes))
            .transpose()?,
    };
    let shape = StreamShape {
        flows: common.flows,
        direction: direction(a.reverse, a.bidir),
        rate_bps: a.rate,
        send_path: send_path(a),
        recv_path: recv_path(a),
        threads: a.threads,
    };
    let stream = StreamSpec::new(shape, sizes);
    let send = stream.send_size_bytes;
    let stop_after_bytes = match (a.bytes, a.blocks) {
        (Some(n), _) => Some(n),
        (None, Some(k)) => Some(k.checked_mul(send.into()).ok_or_else(|| {
            usage(
                format!("-k/--blocks {k}: {k} x {send}-byte calls overflow a byte count"),
                SpecField::StopAfterBytes,
            )
        })?),
        (None, None) => None,
    };
    checked(TestSpec {
        common,
        workload: WorkloadSpec::Stream(StreamSpec {
            recv_wait: recv_wait(a),
            verify: a.verify,
            pin_threads: a.pin_threads,
            tcp: tcp(&a.c, a.nodelay),
            stop_after_bytes,
            ..stream
        }),
    })
}

/// The spec of `wirebench rr` (TCP RR, or UDP RR with `--udp`).
pub fn rr_spec(a: &RrArgs) -> SpecResult {
    let common = common(&a.c)?;
    // UDP requests and responses carry an 8-byte sequence number.
    let min = if a.udp {
        u64::from(MIN_UDP_RR_BYTES)
    } else {
        1
    };
    let req = to_u32(
        a.request_size.or(a.msg_size).unwrap_or(min),
        SpecField::RequestSizeBytes,
    )?;
    let resp = to_u32(
        a.response_size.or(a.msg_size).unwrap_or(min),
        SpecField::ResponseSizeBytes,
    )?;
    if a.udp {
        refuse_congestion_on_udp(&a.c)?;
    }
    let busy_poll = a
        .busy_poll
        .and_then(|b| b.0)
        .map(|so_busy_poll_us| BusyPoll { so_busy_poll_us });
    let workload = if a.udp {
        WorkloadSpec::UdpRr(UdpRrSpec {
            request_size_bytes: req,
            response_size_bytes: resp,
            timeout_ms: a.udp_timeout,
            busy_poll,
        })
    } else {
        WorkloadSpec::Rr(RrSpec {
            request_size_bytes: req,
            response_size_bytes: resp,
            pacing: match a.rate {
                Some(transactions_per_s) => RrLoop::Open {
                    transactions_per_s,
                    max_outstanding: a.max_outstanding.unwrap_or(DEFAULT_MAX_OUTSTANDING),
                },
                None => RrLoop::Closed { burst: a.burst },
            },
            tcp: tcp(&a.c, false),
            busy_poll,
        })
    };
    if a.udp && a.burst != 1 {
        return Err(usage(
            "--burst applies to TCP RR only (UDP RR has one transaction in flight)".into(),
            SpecField::Burst,
        ));
    }
    if a.rate.is_some() && a.burst != 1 {
        return Err(usage(
            "--burst applies to the closed loop; --rate runs an open loop on its own schedule"
                .into(),
            SpecField::Burst,
        ));
    }
    if a.udp && a.rate.is_some() {
        return Err(usage(
            "--rate (the open loop) is supported by TCP RR only".into(),
            SpecField::TransactionsPerS,
        ));
    }
    checked(TestSpec { common, workload })
}

/// The spec of `wirebench crr`.
pub fn crr_spec(a: &CrrArgs) -> SpecResult {
    checked(TestSpec {
        common: common(&a.c)?,
        workload: WorkloadSpec::Crr(CrrSpec {
            request_size_bytes: to_u32(a.request_size, SpecField::RequestSizeBytes)?,
            response_size_bytes: to_u32(a.response_size, SpecField::ResponseSizeBytes)?,
            close_mode: if a.abortive_close {
                wirebench_model::spec::CloseMode::Abortive
            } else {
                wirebench_model::spec::CloseMode::Orderly
            },
            tcp: tcp(&a.c, false),
        }),
    })
}

/// The spec of `wirebench udp`.
pub fn udp_spec(a: &UdpArgs) -> SpecResult {
    refuse_congestion_on_udp(&a.c)?;
    checked(TestSpec {
        common: common(&a.c)?,
        workload: WorkloadSpec::UdpStream(UdpStreamSpec {
            direction: direction(a.reverse, a.bidir),
            datagram_bytes: to_u32(a.msg_size, SpecField::DatagramBytes)?,
            rate_bps: (a.rate > 0).then_some(a.rate),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_model::spec::MAX_TOTAL_MSG_BUFFER_BYTES;

    #[test]
    fn default_stream_message_size_fits_the_buffer_bound() {
        // Thread per flow up to 32 connections; the epoll engine above, bounded by its calls
        // budget; non-copy paths and paced flows keep a thread (and a buffer) per flow.
        let size = |args: &[&str]| call_sizes(args).0;
        assert_eq!(size(&[]), 1 << 20);
        assert_eq!(size(&["-P", "32", "--bidir"]), 1 << 20);
        assert_eq!(size(&["-P", "4096"]), 1 << 20);
        assert_eq!(size(&["-P", "4097"]), 512 << 10);
        assert_eq!(size(&["-P", "10000"]), 256 << 10);
        assert_eq!(size(&["-P", "10000", "--bidir"]), 128 << 10);
        assert_eq!(size(&["-P", "512", "-Z"]), 1 << 20);
        assert_eq!(size(&["-P", "1000", "-Z"]), 512 << 10);
        assert_eq!(size(&["-P", "10000", "-b", "1M"]), 32 << 10);
        assert_eq!(size(&["-P", "10000", "--bidir", "-Z"]), 16 << 10);
        for flows in ["1", "3", "100", "513", "4000", "10000"] {
            for extra in [&[][..], &["--bidir"], &["-Z"], &["-Z", "--bidir"]] {
                let mut args = vec!["-P", flows];
                args.extend_from_slice(extra);
                let spec = stream_of(&args);
                let WorkloadSpec::Stream(st) = &spec.workload else {
                    unreachable!()
                };
                let biggest = u64::from(st.send_size_bytes.max(st.recv_size_bytes));
                assert!(
                    biggest * spec.message_buffers() <= MAX_TOTAL_MSG_BUFFER_BYTES,
                    "{args:?}"
                );
            }
        }
    }

    /// The spec `wirebench stream ARGS` resolves to.
    fn stream_of(args: &[&str]) -> TestSpec {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["wirebench", "stream"].iter().chain(args))
            .expect("valid arguments");
        let crate::cli::Command::Stream(a) = cli.command else {
            unreachable!("a stream command")
        };
        stream_spec(&a).expect("a valid spec")
    }

    /// The stream spec `wirebench stream ARGS` resolves to: (send, receive) call sizes.
    fn call_sizes(args: &[&str]) -> (u32, u32) {
        let WorkloadSpec::Stream(st) = stream_of(args).workload else {
            unreachable!("a stream spec")
        };
        (st.send_size_bytes, st.recv_size_bytes)
    }

    #[test]
    fn a_sender_that_does_not_copy_is_received_in_cache_sized_calls() {
        assert_eq!(call_sizes(&[]), (1 << 20, 1 << 20));
        assert_eq!(call_sizes(&["--send-path", "uring"]), (1 << 20, 1 << 20));
        for noncopy in [
            &["-Z"][..],
            &["--send-path", "splice"],
            &["--send-path", "zerocopy"],
        ] {
            assert_eq!(call_sizes(noncopy), (1 << 20, 256 << 10), "{noncopy:?}");
        }
        // -l names both calls, --recv-size the receiver's; a smaller message is received whole.
        assert_eq!(call_sizes(&["-Z", "-l", "1M"]), (1 << 20, 1 << 20));
        assert_eq!(call_sizes(&["-Z", "--recv-size", "2M"]), (1 << 20, 2 << 20));
        assert_eq!(call_sizes(&["-Z", "-P", "10000"]), (32 << 10, 32 << 10));
    }

    #[test]
    fn notsent_lowat_is_a_tcp_option_with_a_bound() {
        use clap::Parser;
        let WorkloadSpec::Stream(st) = stream_of(&["--notsent-lowat", "16K"]).workload else {
            unreachable!()
        };
        assert_eq!(st.tcp.notsent_lowat_bytes, Some(16 << 10));
        let refused = |args: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(["wirebench"].iter().chain(args))
                .expect("valid arguments");
            match cli.command {
                crate::cli::Command::Stream(a) => stream_spec(&a),
                crate::cli::Command::Udp(a) => udp_spec(&a),
                _ => unreachable!(),
            }
            .expect_err("refused")
        };
        let (msg, field) = refused(&["stream", "--notsent-lowat", "2G"]);
        assert_eq!(field, Some(SpecField::NotsentLowatBytes));
        assert!(msg.starts_with("--notsent-lowat"), "{msg}");
        let (msg, field) = refused(&["udp", "--notsent-lowat", "16K"]);
        assert_eq!(field, Some(SpecField::NotsentLowatBytes));
        assert!(msg.contains("UDP has no send queue"), "{msg}");
    }

    #[test]
    fn refusals_name_the_flag_and_the_unit() {
        use wirebench_model::validate::LimitName;
        let out = |field, value, min, max, limit| {
            user_message(
                field,
                &SpecProblem::OutOfRange {
                    value,
                    min,
                    max,
                    limit,
                },
            )
        };
        assert_eq!(
            out(
                SpecField::DurationMs,
                100_000_000,
                100,
                3_600_000,
                Some(LimitName::MaxDuration)
            ),
            "-t/--duration 100000 s: must be 0.1 s to 3600 s (the server allows at most 3600 s: \
             `serve --max-duration`)"
        );
        assert_eq!(
            out(SpecField::Flows, 200, 1, 128, Some(LimitName::MaxFlows)),
            "-P/--flows 200: must be 1 to 128 (the server allows at most 128: `serve --max-flows`)"
        );
        assert_eq!(
            out(SpecField::WindowBytes, 1024, 2048, 1 << 28, None),
            "-w/--window 1K bytes: must be 2K bytes to 256M bytes"
        );
        assert_eq!(
            out(SpecField::IntervalMs, 50, 100, 10_000, None),
            "-i/--interval 0.05 s: must be 0.1 s to 10 s"
        );
    }
}
