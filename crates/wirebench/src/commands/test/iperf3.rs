//! `wirebench stream --iperf3 -H HOST` and `wirebench udp --iperf3 -H HOST`: a test against
//! a stock iperf3 server. The spec is built as for any stream or UDP test; the flags that
//! set something at the server's end (which a stock iperf3 server does not take from a
//! client) or that only make sense against wirebench's own daemon are refused before
//! anything runs.

use wirebench_model::validate::SpecField;
use wirebench_net::iperf3_client::Iperf3Options;

use super::run_client_with;
use crate::args::{ClientArgs, StreamArgs, UdpArgs};
use crate::specs::{stream_spec, udp_spec, SpecResult};

/// The flags of every client command that `--iperf3` refuses, with why, as they apply to `c`.
fn refused_common(c: &ClientArgs) -> Vec<(&'static str, &'static str)> {
    let both_ends = "it sets both ends, and an iperf3 server takes no such setting";
    [
        (
            c.auth.is_some(),
            "--auth",
            "iperf3 servers do not speak wirebench's authentication",
        ),
        (
            c.profile || c.profile_hz.is_some(),
            "--profile",
            "the server end cannot be profiled through iperf3",
        ),
        (
            matches!(c.affinity, Some((_, Some(_)))),
            "-A with a remote CPU",
            "iperf3's server affinity is not sent; give only the local CPU (-A 2,)",
        ),
        (c.notsent_lowat.is_some(), "--notsent-lowat", both_ends),
        (c.buffer_offset.is_some(), "--buffer-offset", both_ends),
        (c.fq_rate.is_some(), "--fq-rate", both_ends),
        (c.dont_fragment, "--dont-fragment", both_ends),
    ]
    .into_iter()
    .filter(|(set, _, _)| *set)
    .map(|(_, flag, why)| (flag, why))
    .collect()
}

/// The flags `--iperf3` refuses, with why, as they apply to `a`.
pub fn refused_flags(a: &StreamArgs) -> Vec<(&'static str, &'static str)> {
    let both_ends = "it sets both ends, and an iperf3 server takes no such setting";
    let mut out = refused_common(&a.c);
    for (set, flag, why) in [
        (a.threads.is_some(), "--threads", both_ends),
        (a.pin_threads, "--pin-threads", both_ends),
        (
            a.verify,
            "--verify",
            "iperf3 sends random bytes, not wirebench's payload",
        ),
    ] {
        if set {
            out.push((flag, why));
        }
    }
    out
}

/// The usage error naming every refused flag, if any.
fn refusal(refused: &[(&'static str, &'static str)]) -> Result<(), (String, Option<SpecField>)> {
    if refused.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = refused
        .iter()
        .map(|(flag, why)| format!("{flag} ({why})"))
        .collect();
    Err((
        format!(
            "--iperf3: these flags have no meaning against an iperf3 server: {}",
            list.join("; ")
        ),
        None,
    ))
}

/// The spec of `stream --iperf3`, or the usage error naming every refused flag.
fn spec(a: &StreamArgs) -> SpecResult {
    refusal(&refused_flags(a))?;
    let spec = stream_spec(a)?;
    wirebench_net::iperf3_client::params_of(&spec).map_err(|m| (m, None))?;
    Ok(spec)
}

/// Run `stream --iperf3`.
pub fn run_stream(a: &StreamArgs) -> i32 {
    let opts = Iperf3Options {
        retry: a.retry.unwrap_or(0),
        udp_counters_64bit: false,
    };
    run_client_with(&a.c, spec(a), None, Some(opts))
}

/// The spec of `udp --iperf3`, or the usage error naming every refused flag.
fn udp_iperf3_spec(a: &UdpArgs) -> SpecResult {
    refusal(&refused_common(&a.c))?;
    let spec = udp_spec(a)?;
    wirebench_net::iperf3_client::params_of(&spec).map_err(|m| (m, None))?;
    Ok(spec)
}

/// Run `udp --iperf3`.
pub fn run_udp(a: &UdpArgs) -> i32 {
    let opts = Iperf3Options {
        retry: a.retry.unwrap_or(0),
        udp_counters_64bit: a.udp_counters_64bit,
    };
    run_client_with(&a.c, udp_iperf3_spec(a), None, Some(opts))
}
