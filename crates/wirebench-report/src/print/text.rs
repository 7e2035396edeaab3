//! Sentences: the one place where typed warnings, abort reasons, flow errors, engines and
//! errors become English. Every string that came from a peer (an OS error text, a
//! congestion-control name, a detail) is escaped here with [`escape`] before it can reach a
//! terminal.

use std::fmt::Write as _;

use wirebench_model::abort::{AbortReason, EngineKind, Placement};
use wirebench_model::error::ErrorInfo;
use wirebench_model::side::PathUsed;
use wirebench_model::text::escape;
use wirebench_model::validate::LimitName;
use wirebench_model::warning::{
    Cause, CpuUnmeasured, DataThread, EpollBlocker, FallbackReason, FlowError, Impossibility,
    Noted, OsError, Step, Warning,
};

use crate::label;

/// `"s"` unless `n` is 1.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A list of flow ids: `flow 3`, `flows 0, 1, 2`, `flows 0, 1, 2 … (40 in all)`.
fn flows(ids: &[u32]) -> String {
    const SHOWN: usize = 8;
    let list: Vec<String> = ids.iter().take(SHOWN).map(u32::to_string).collect();
    let mut s = format!("flow{} {}", plural(ids.len() as u64), list.join(", "));
    if ids.len() > SHOWN {
        let _ = write!(s, " … ({} in all)", ids.len());
    }
    s
}

fn os(e: &OsError) -> String {
    escape(&e.message)
}

/// The name of a step of a flow's life.
pub fn step(s: Step) -> &'static str {
    match s {
        Step::Send => "sending",
        Step::Receive => "receiving",
        Step::RequestWrite => "writing a request",
        Step::RequestRead => "reading a request",
        Step::ResponseWrite => "writing a response",
        Step::ResponseRead => "reading a response",
        Step::Connect => "connecting",
        Step::SocketOptions => "setting socket options",
        Step::Shutdown => "shutting down",
        Step::PeerClose => "waiting for the peer's close",
        Step::Pin => "pinning to a CPU",
        Step::ThreadStart => "starting its thread",
        Step::Thread => "running its thread",
        Step::Epoll => "waiting in epoll",
        Step::ZerocopyCompletions => "collecting MSG_ZEROCOPY completions",
        Step::UringSend => "completing io_uring sends",
        Step::Verify => "checking the payload",
        Step::Drain => "draining after the stop",
    }
}

/// `receiving: connection reset by peer`.
pub fn flow_error(e: &FlowError) -> String {
    let what = match &e.cause {
        Cause::Os { error } => os(error),
        Cause::PeerClosed { mid_message: true } => "the peer closed mid-message".into(),
        Cause::PeerClosed { mid_message: false } => "the peer closed the connection".into(),
        Cause::TimedOut { after_ms } => format!("nothing arrived within {after_ms} ms"),
        Cause::Mismatch {
            mismatched_bytes,
            first_offset,
        } => format!(
            "{mismatched_bytes} payload byte{} differed from the expected content, the first \
             at offset {first_offset}",
            plural(*mismatched_bytes)
        ),
        Cause::Panicked => "the thread ended without a result".into(),
    };
    format!("{}: {what}", step(e.step))
}

fn thread(t: DataThread) -> String {
    match t {
        DataThread::Flow(i) => format!("the thread of flow {i}"),
        DataThread::Worker(i) => format!("epoll worker {i}"),
        DataThread::OpenLoopSender(i) => format!("the open-loop sender of flow {i}"),
        DataThread::UdpReceiver(i) => format!("UDP receive socket {i}"),
    }
}

/// Why an end used copy instead of the path asked for.
pub fn fallback(r: &FallbackReason) -> String {
    match r {
        FallbackReason::DisabledByEnv => "disabled by WIREBENCH_DISABLE_PATHS".into(),
        FallbackReason::SetupFailed { error } => format!("setting it up failed: {}", os(error)),
        FallbackReason::EngineHasOnlyCopy => {
            "the many-flow epoll engine has only the copy path".into()
        }
    }
}

fn path(p: PathUsed) -> String {
    match p {
        PathUsed::Send(s) => format!("send path {}", s.as_str()),
        PathUsed::Recv(r) => format!("receive path {}", r.as_str()),
    }
}

fn placement(p: &Placement) -> String {
    match p {
        Placement::Scheduler => "placed by the scheduler".into(),
        Placement::Pinned { cpu } => format!("pinned to CPU {cpu}"),
        Placement::RoundRobin { cpus } => {
            let l: Vec<String> = cpus.iter().map(u32::to_string).collect();
            format!("pinned round-robin to CPUs {}", l.join(","))
        }
    }
}

/// `thread per flow, 2 threads, placed by the scheduler`.
pub fn engine(e: &EngineKind) -> String {
    match e {
        EngineKind::ThreadPerFlow {
            threads,
            placement: p,
        } => format!(
            "a thread per flow ({threads} thread{}, {})",
            plural(u64::from(*threads)),
            placement(p)
        ),
        EngineKind::Epoll {
            workers,
            placement: p,
        } => format!(
            "epoll, {workers} worker thread{}, {}",
            plural(u64::from(*workers)),
            placement(p)
        ),
    }
}

/// A server limit with the flag that sets it: `the server's --max-rate`.
pub fn limit(l: LimitName) -> String {
    match l.flag() {
        Some(f) => format!("the server's limit `serve {f}`"),
        None => match l {
            LimitName::MaxWarmup => "the server's longest warm-up".into(),
            LimitName::MaxMsgSize => "the server's largest message size".into(),
            LimitName::MaxWindow => "the server's largest socket buffer".into(),
            LimitName::ServerCpus => "the CPUs the server has".into(),
            _ => format!("the server's limit {l:?}"),
        },
    }
}

/// Why a test ended early.
pub fn abort(r: &AbortReason) -> String {
    match r {
        AbortReason::Interrupted => "interrupted by the user".into(),
        AbortReason::ServerShutdown => "the server was shut down".into(),
        AbortReason::LimitExceeded {
            limit: l,
            observed_bps,
            max_bps,
        } => format!(
            "limit exceeded: {} Mbit/s observed, {} allows {} Mbit/s",
            mbit(*observed_bps),
            limit(*l),
            mbit(*max_bps)
        ),
        AbortReason::PeerSilent { silence_ms } => {
            format!("the peer sent nothing for {silence_ms} ms")
        }
        AbortReason::ControlLost { detail } => {
            format!("the control connection was lost: {}", escape(detail))
        }
        AbortReason::ProtocolError { detail } => {
            format!("the peer broke the protocol: {}", escape(detail))
        }
        AbortReason::Timeout { phase } => {
            format!("the deadline of the {} phase passed", escape(phase))
        }
        AbortReason::EngineFailed { detail } => {
            format!("the engine could not run: {}", escape(detail))
        }
        AbortReason::Unspecified => "the peer aborted without a known reason".into(),
    }
}

fn mbit(bps: u64) -> String {
    format!("{:.3}", bps as f64 / 1e6)
}

fn cpu_unmeasured(r: &CpuUnmeasured) -> String {
    match r {
        CpuUnmeasured::ProcStatUnreadable => "/proc/stat could not be read".into(),
        CpuUnmeasured::Incomparable { detail } => format!(
            "the two /proc/stat snapshots could not be compared ({})",
            escape(detail)
        ),
    }
}

fn blocker(b: &EpollBlocker) -> String {
    match b {
        EpollBlocker::Paced => "a rate is set and the epoll engine does not pace".into(),
        EpollBlocker::Paths { send, recv } => format!(
            "send path {} / receive path {} (the epoll engine has only copy)",
            send.as_str(),
            recv.as_str()
        ),
    }
}

/// The sentence of a warning (without the end it came from).
pub fn warning(w: &Warning) -> String {
    engine_warning(w).unwrap_or_else(|| analysis_warning(w))
}

/// The sentences of the warnings an engine raises; `None` for the others.
fn engine_warning(w: &Warning) -> Option<String> {
    Some(match w {
        Warning::ThreadStartFailed { thread: t, error } => {
            format!(
                "{} could not be started: {}; its flow did not run",
                thread(*t),
                os(error)
            )
        }
        Warning::PinFailed { thread: t, error } => format!(
            "{} could not be pinned ({}); it ran where the scheduler put it",
            thread(*t),
            os(error)
        ),
        Warning::PathFallback {
            flows: f,
            requested,
            reason,
        } => format!(
            "{} used the copy path instead of {}: {}",
            flows(f),
            path(*requested),
            fallback(reason)
        ),
        Warning::DrainTruncated {
            thread: t,
            drain_limit_ms,
        } => format!(
            "{} saw no end of data within {drain_limit_ms} ms after the stop; its window was \
             cut there",
            thread(*t)
        ),
        Warning::CpuNotMeasured { reason } => {
            format!("CPU was not measured: {}", cpu_unmeasured(reason))
        }
        Warning::ProfileUnavailable { reason } => super::profile::unavailable(reason),
        Warning::ProfileSamplesLost {
            lost_samples,
            samples,
        } => format!(
            "the profile's ring buffers overflowed: the kernel dropped {lost_samples} samples              ({samples} kept); the breakdown covers the rest"
        ),
        Warning::ProfileInStep {
            freq_hz,
            periodic_hz,
            phases,
            tick,
        } => format!(
            "the profile sampled at {freq_hz} Hz, in step with {}: its samples fell at only \
             {phases} phase(s) of it, so the breakdown may be far from where the CPU's time \
             went; a prime rate (the default {} Hz, or 3989 Hz) is out of step",
            if *tick {
                format!("the kernel's {periodic_hz} Hz tick")
            } else {
                "round-millisecond timers".to_string()
            },
            wirebench_model::profile::DEFAULT_PROFILE_HZ
        ),
        Warning::PacingUnsupported { rate_bps } => format!(
            "the many-flow engine does not pace: the {} Mbit/s per flow asked for was not \
             applied",
            mbit(*rate_bps)
        ),
        Warning::ThreadsIgnored {
            threads,
            blocker: b,
            flows: n,
        } => format!(
            "--threads {threads} ignored: {}; {n} thread{} ran, one per flow",
            blocker(b),
            plural(u64::from(*n))
        ),
        Warning::RepeatedErrors {
            flow,
            step: s,
            count,
            last,
        } => format!(
            "flow {flow}: {count} errors while {}; the last: {}",
            step(*s),
            os(last)
        ),
        Warning::LatencyClamped { count } => format!(
            "{count} latenc{} outside the histogram's range (1 ns to 100 s) were clamped into it",
            if *count == 1 { "y" } else { "ies" }
        ),
        _ => return None,
    })
}

/// The sentences of the warnings the analysis and the runner raise.
fn analysis_warning(w: &Warning) -> String {
    match w {
        Warning::UnexpectedFlow { host, flow } => format!(
            "the {} reported flow {flow}, which the test does not have; ignored",
            label::host(*host)
        ),
        Warning::NoServerReport => {
            "server: no report received; the figures only it measures are 0 or absent".into()
        }
        Warning::SideAborted { host, reason } => format!(
            "{}: its part of the test was aborted: {}",
            label::host(*host),
            abort(reason)
        ),
        Warning::CongestionMismatch {
            host,
            requested,
            in_use,
            flows: f,
        } => format!(
            "{}: congestion control {} is in use on {} although {} was requested",
            label::host(*host),
            escape(in_use),
            flows(f),
            escape(requested)
        ),
        Warning::CongestionUnreported => {
            "neither end reported the congestion control of its data sockets".into()
        }
        Warning::MissingFlowFigures { flow, host, role } => format!(
            "flow {flow}: the {} ({}) reported no figures; they are 0",
            label::role(*role),
            label::host(*host)
        ),
        Warning::ZeroWindow { flow, host, role } => format!(
            "flow {flow}: zero-length measurement window at the {} ({}); its throughput there \
             is 0",
            label::role(*role),
            label::host(*host)
        ),
        Warning::FlowFailed { flow, host, error } => format!(
            "flow {flow} failed at the {}: {}",
            label::host(*host),
            flow_error(error)
        ),
        Warning::EmptyDirectionWindow { dir, role } => format!(
            "{}: the {}s' windows are all empty; the total is 0",
            label::dir(*dir),
            label::role(*role)
        ),
        Warning::UnreadBytes {
            dir,
            sender_total_bytes,
            receiver_total_bytes,
        } => {
            let d = sender_total_bytes.saturating_sub(*receiver_total_bytes);
            format!(
                "{}: {d} bytes were sent but never read (senders {sender_total_bytes}, \
                 receivers {receiver_total_bytes}): the run was cut short or a flow failed",
                label::dir(*dir)
            )
        }
        Warning::StopCountNotReached {
            dir,
            receiver_total_bytes,
            asked_bytes,
            bound_ms,
        } => format!(
            "{}: the receivers read {receiver_total_bytes} of the {asked_bytes} bytes asked \
             (-n/-k) before the test ended (bound -t {} s, or a flow failed)",
            label::dir(*dir),
            *bound_ms as f64 / 1000.0
        ),
        Warning::RateVaried {
            dir,
            intervals,
            interval_s,
            min_bps,
            median_bps,
            max_bps,
        } => {
            let u = crate::print::units::RateUnit::AutoBits;
            format!(
                "{}: the receivers' rate changed during the run: {} to {} (median {}) over \
                 {intervals} intervals of {} s after the ramp-up; the total averages different \
                 states of the path or the machine: repeat it (--iterations) before trusting one \
                 figure",
                label::dir(*dir),
                u.rate(*min_bps),
                u.rate(*max_bps),
                u.rate(*median_bps),
                crate::print::units::number(*interval_s),
            )
        }
        Warning::WindowEdgeDifference {
            dir,
            sender_bytes,
            receiver_bytes,
        } => format!(
            "note: {}: senders counted {sender_bytes} bytes in their windows, receivers \
             {receiver_bytes}: the sender counts bytes accepted into its socket buffer, the \
             receiver bytes delivered, and the window edges at the two ends are apart by the \
             bytes in flight",
            label::dir(*dir)
        ),
        other => cpu_and_workload_warning(other),
    }
}

/// The sentences of the CPU, request/response, UDP and runner warnings.
fn cpu_and_workload_warning(w: &Warning) -> String {
    match w {
        Warning::WindowCapped {
            host,
            requested_bytes,
            rmem_max_bytes,
            wmem_max_bytes,
        } => {
            let show = |v: &Option<u64>| v.map_or_else(|| "unknown".into(), |m| m.to_string());
            format!(
                "{}: -w {requested_bytes} bytes is above what the kernel allows (net.core.rmem_max \
                 {}, net.core.wmem_max {} bytes): the buffers were capped there (see the effective \
                 sizes); raise the sysctls to test larger windows",
                label::host(*host),
                show(rmem_max_bytes),
                show(wmem_max_bytes)
            )
        }
        Warning::NoCpuFigures { host } => format!("{}: no CPU figures", label::host(*host)),
        Warning::SameHost => "both ends ran on one machine (one kernel): their system-wide CPU \
                              figures count the same CPUs"
            .into(),
        Warning::EmptyCpuWindow { host } => {
            format!("{}: the CPU window is empty", label::host(*host))
        }
        Warning::ProcStatBelowThreads {
            host,
            system_busy_pct,
        } => format!(
            "{}: /proc/stat shows {system_busy_pct:.1} % busy, less than wirebench's own \
             threads used: the system-wide figure is a lower bound",
            label::host(*host)
        ),
        Warning::CpuBound {
            host,
            cpu,
            busy_pct,
            threads_pct,
        } => format!(
            "CPU-bound: {} CPU {cpu} at {busy_pct:.0}% busy (wirebench's data threads \
             {threads_pct:.0}% of one CPU) — the result measures the CPU, not the path",
            label::host(*host)
        ),
        Warning::NoRrFigures => "the client reported no request/response figures".into(),
        Warning::RequestsInFlight {
            server_transactions,
            client_transactions,
        } => format!(
            "the server answered {server_transactions} transactions, the client completed \
             {client_transactions}: the difference was in flight at the stop"
        ),
        Warning::OpenLoopBehind {
            flow,
            achieved_per_s,
            requested_per_s,
            missed_slots,
            peak_outstanding,
            max_outstanding,
        } => format!(
            "flow {flow}: open loop behind schedule: {achieved_per_s:.1}/s achieved of \
             {requested_per_s:.1}/s requested, {missed_slots} slots never sent, peak \
             outstanding {peak_outstanding} (cap {max_outstanding})"
        ),
        Warning::UdpMissingReport { flow, role } => format!(
            "UDP flow {flow}: the {}'s report is missing",
            label::role(*role)
        ),
        Warning::PacingFellBehind { dir, resets } => format!(
            "{}: the UDP sender fell behind its schedule {resets} time{} and skipped ahead \
             instead of bursting (the rate was not met then)",
            label::dir(*dir),
            plural(*resets)
        ),
        Warning::Impossible { what } => format!(
            "INVALID: {}; these figures cannot be true",
            impossibility(what)
        ),
        Warning::EndedBeforeWindow { run } => format!(
            "run {run} ended during warm-up, before its measurement window opened: it has no \
             figures"
        ),
        Warning::RunAborted { run, reason } => {
            format!("run {run} was aborted: {}", abort(reason))
        }
        // Engine warnings are worded by `engine_warning`; a variant neither function words
        // still reaches the reader, as its code and parameters.
        other => format!("{other:?}"),
    }
}

/// What cannot be true, in words.
pub fn impossibility(i: &Impossibility) -> String {
    match i {
        Impossibility::ReadMoreThanWritten {
            dir,
            sender_total_bytes,
            receiver_total_bytes,
        } => format!(
            "{}: the receivers read {receiver_total_bytes} bytes but the senders wrote only \
             {sender_total_bytes}",
            label::dir(*dir)
        ),
        Impossibility::ReceivedMoreThanSent {
            dir,
            sent,
            received,
        } => format!(
            "{}: the receivers got {received} distinct window datagrams of {sent} sent",
            label::dir(*dir)
        ),
        Impossibility::WindowAboveTotal {
            host,
            flow,
            window_bytes,
            total_bytes,
        } => format!(
            "flow {flow} at the {}: {window_bytes} bytes in the window, {total_bytes} over the \
             whole test",
            label::host(*host)
        ),
        Impossibility::RateAboveCeiling {
            dir,
            rate_bps,
            ceiling_bps,
        } => format!(
            "{}: {rate_bps:.3e} bit/s, above the {ceiling_bps:.0e} bit/s no host reaches",
            label::dir(*dir)
        ),
        Impossibility::MoreTransactionsThanAnswered {
            client_transactions,
            server_transactions,
        } => format!(
            "the client completed {client_transactions} transactions but the server answered \
             only {server_transactions}"
        ),
        Impossibility::TransactionRateAboveCeiling {
            transactions_per_s,
            ceiling_per_s,
        } => format!(
            "{transactions_per_s:.3e} transactions/s, above the {ceiling_per_s:.0e}/s no host \
             reaches"
        ),
    }
}

/// A warning with the end it came from: `client: …` for one end's warnings.
pub fn noted(n: &Noted) -> String {
    match n.host {
        Some(h) => format!("{}: {}", label::host(h), warning(&n.warning)),
        None => warning(&n.warning),
    }
}

/// The message of a failed invocation, one line: `invalid_spec: … (field common.flows)`.
pub fn error_text(e: &ErrorInfo) -> String {
    let mut msg = format!("{}: {}", e.kind.as_str(), escape_long(&e.message));
    // A message rendered from the typed problem says it all (field and limit stay in JSON).
    if e.problem.is_some() {
        return msg;
    }
    // A usage error names the flag the user typed; the spec field is for the others (and
    // stays in the JSON).
    if let Some(f) = e
        .field
        .filter(|_| e.kind != wirebench_model::error::ErrorKind::Usage)
    {
        let _ = write!(msg, " (field {f})");
    }
    // The limit's flag, unless the message already names it.
    if let Some(l) = e
        .limit
        .filter(|l| l.flag().is_none_or(|f| !e.message.contains(f)))
    {
        let _ = write!(msg, " ({})", limit(l));
    }
    msg
}

/// [`escape`] with a bound long enough for our own messages (which may quote peer text).
fn escape_long(s: &str) -> String {
    wirebench_model::text::escape_bounded(s, 2048)
}
