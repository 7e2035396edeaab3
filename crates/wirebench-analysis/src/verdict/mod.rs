//! The verdict: what limited a stream or request/response run, from evidence the ends
//! already measured. The rules, in order (the first that applies names the limiter; every
//! fact is kept as evidence either way):
//!
//! 1. **Pacing** — the spec paced the senders (`-b`) and the receivers got at least
//!    [`PACED_ACHIEVED_PCT`] % of flows × rate.
//! 2. **Receive window / send buffer** — in the direction that carried the most bytes, the
//!    senders' TCP_INFO says they were limited by the peer's window
//!    (`tcpi_rwnd_limited`) or their own buffer (`tcpi_sndbuf_limited`) for at least
//!    [`LIMITED_PCT`] % of their busy time (`tcpi_busy_time`), summed over the flows.
//!    When the receiving end's threads, or the CPU they were pinned to, were at least
//!    [`RECEIVER_BUSY_PCT`] % busy, the receiver fell behind (the window closes whatever
//!    the buffer size), and the first experiment suggested is a cheaper receiver, then a
//!    larger buffer. The limiter names the largest receive buffer at close and whether
//!    autotuning set it. A buffer of at least [`READER_BEHIND_BDP_FACTOR`] × the
//!    bandwidth-delay product was not too small: the reader fell behind. When it did so with
//!    light threads that waited on a run queue at least [`RUN_DELAY_PCT`] % of the window
//!    while other processes held at least [`OTHERS_HOLD_PCT`] % of one CPU on its host, the
//!    host starved the reader: the limiter says so, and the first experiment is a quieter
//!    host.
//! 3. **The machine** (when this boot's `wirebench limits` are cached; applied by
//!    [`machine_limits`] after the run) — the payload × the copies made of it on this
//!    machine reached at least [`COPY_LIMIT_PCT`] % of the memory copy bandwidth measured at
//!    the call size, or, both ends on one kernel, the throughput reached at least
//!    [`LOOPBACK_CEILING_PCT`] % of the loopback TCP ceiling, with the congestion control the
//!    ceiling was measured with (another one makes the two not comparable: bbr paces a
//!    loopback flow to about a third of cubic's rate). A run above 100 % of either exceeded
//!    it: that is evidence the figure was measured low, never the limit, and the verdict
//!    asks for `wirebench limits --refresh`. Either fact is evidence whether or not it is
//!    the limit, with when and under what load the limits were measured; without cached
//!    limits the verdict lists them missing.
//! 4. **CPU** — the busiest of the CPUs an end's data threads could run on was at least
//!    [`CPU_SATURATED_PCT`] % busy over the window (`/proc/stat`), and the test's own work
//!    kept it busy: an end that could run there had its data threads use at least
//!    [`OWN_WORK_PCT`] % of one CPU, or the CPU spent at least [`OWN_WORK_PCT`] % in
//!    softirq (network processing). When the threads used less but waited on a run queue
//!    (schedstat, wake-up to running included) at least [`RUN_DELAY_PCT`] % of the window,
//!    the CPU is the limit too, unless other processes (`/proc/PID/stat`, wirebench's own
//!    left out) used at least [`OTHERS_HOLD_PCT`] % of one CPU: then the host was busy with
//!    them, and the **busy host** is named after rule 5. A CPU that another process kept
//!    busy while the test's threads neither ran nor waited there did not limit the test (the
//!    evidence still shows it, with the busiest other processes). The end named is the one
//!    whose data threads could run there (both ends of a namespace or loopback test share
//!    one kernel). When the hypervisor took at least [`STEAL_LIMIT_PCT`] % of such a CPU's
//!    window (`steal`: a virtual CPU the host ran something else on while this guest had
//!    work for it), the **host's steal** is named in place of the CPU or the busy host: the
//!    test got that much less than a CPU, and no change to the test or this guest gives it
//!    back. Steal on a CPU the test neither worked nor waited on is evidence only.
//! 5. **The path** (stream, not over loopback) — the senders' median smoothed round trip
//!    over the window rose at least [`QUEUE_RISE_PCT`] % and [`QUEUE_RISE_MIN_NS`] ns above
//!    their minimum round trip (TCP_INFO): a queue formed at a bottleneck downstream of the
//!    senders, which were held back by neither window, buffer nor their CPU, so the path
//!    carried what it could; the rate is its estimate. A sender starved of CPU cannot build
//!    a queue, so this comes before the busy host.
//! 6. **Sender idle** — the senders' summed busy time covers less than
//!    100 − [`IDLE_PCT`] % of flows × the sender window: nothing was in flight for the rest.
//! 7. **Loss** — counting only the retransmissions the receivers did not report back as
//!    duplicates (D-SACK: reordering or an early timer, not loss), at least [`RETRANSMIT_PCT`]
//!    % of the segments (payload ÷ a nominal 1448-byte
//!    MSS) were retransmitted (TCP_INFO) and none of the above applies.
//! 8. **Round trip** (request/response; a busy host of rule 4 comes first: a round trip
//!    that waits for a CPU other processes hold is theirs) — closed loop: each flow has `burst` transactions
//!    in flight, so flows × burst / mean round trip bounds the rate (Little's law); when
//!    the measured rate is within [`ROUND_TRIP_MATCH_PCT`] % of it, the round trip is the
//!    limit. A busy-polled run (`rr --busy-poll`) keeps its CPUs busy by design, so rule 4
//!    does not apply to it (the CPU figures stay evidence).
//! 9. Otherwise **undetermined**, with the evidence and what was missing.

mod machine;
mod path;
mod receiver;

pub use machine::{machine_limits, LIMIT_EXCEEDED_PCT};
pub use path::{QUEUE_RISE_MIN_NS, QUEUE_RISE_PCT};

use receiver::{reader_starved, receiver_busy};

use wirebench_model::profile::{EndProfile, ProfileCategory};
use wirebench_model::result::{DirectionSummary, EndCpu, RrSummary, StreamSummary};
use wirebench_model::side::{HostRole, Role, SideData, SideReport};
use wirebench_model::spec::{FlowDir, TestSpec};
use wirebench_model::verdict::{Evidence, Limiter, Missing, Suggestion, Verdict};
use wirebench_stats::cpu::CpuBreakdown;

/// A CPU at least this busy is saturated, percent.
pub const CPU_SATURATED_PCT: f64 = 90.0;
/// A saturated CPU is the test's limit only when an end's data threads that could run there
/// used at least this much of one CPU, or the CPU spent this much in softirq, percent.
pub const OWN_WORK_PCT: f64 = 25.0;
/// A saturated CPU of which the hypervisor took at least this share of the window
/// (`steal`) limited the test through its host ([`Limiter::HostSteal`]), percent: a quarter
/// of the CPU, as for the test's own work. A clean-clone CI run on this project's 2-vCPU
/// KVM guests once sampled its spinning CPUs at half the timer's rate: the host held them
/// half the time.
pub const STEAL_LIMIT_PCT: f64 = 25.0;
/// … or when such an end's data threads waited on a run queue this share of the window
/// (summed over its threads), percent. Two ends pinned to one CPU, ping-ponging, each wait
/// 25–38 %; a request/response flow over a 4 ms path, unpinned next to a process spinning on
/// one CPU, 0.7 % (Intel Xeon VM, 2026-11-28).
pub const RUN_DELAY_PCT: f64 = 10.0;

/// The receiving flows' summed autotuned buffers (`SO_RCVBUF` at close) from which a busy
/// receiver is told to try smaller fixed buffers ([`Suggestion::SmallerWindow`]) instead of
/// larger ones, and the sending flows' (`SO_SNDBUF`) from which it is also told to hold
/// unsent data back ([`Suggestion::NotsentLowat`]): 256 MiB, far beyond any cache.
/// Measured on a 2-vCPU KVM guest (loopback, cubic, 3 interleaved rounds): 10,000
/// autotuned flows (buffers of 1.3–24 MiB each) moved
/// 0.58x of one flow's rate, and 0.83x with `-w 256K` at both ends; in a second series
/// (5 rounds) 0.56x, 0.81x with `-w 256K` and 0.70x with `--notsent-lowat 16K`.
pub const MANY_BUFFERS_BYTES: u64 = 256 << 20;
/// Senders limited this share of their busy time are window- or buffer-limited, percent.
pub const LIMITED_PCT: f64 = 25.0;
/// A receiving end at least this busy (its threads, percent of one CPU each, or the CPU they
/// were pinned to) when the window limited the senders: the receiver fell behind, and a
/// cheaper receiver or another CPU is the first experiment, a larger buffer the second. At
/// 1 MiB calls on loopback (Intel Xeon VM, 2026-11-27) a receiver that kept up ran at
/// 92–97 %, one that fell behind at 74–89 %; one with a 4 KiB buffer and a receiver that
/// discards at 0–22 %.
pub const RECEIVER_BUSY_PCT: f64 = 60.0;
/// A paced run that achieved this share of its target is limited by the pacing, percent.
pub const PACED_ACHIEVED_PCT: f64 = 95.0;
/// Senders with nothing in flight this share of the window are idle-limited, percent.
pub const IDLE_PCT: f64 = 25.0;
/// Retransmitted segments at least this share of the segments sent make loss the limit,
/// percent.
pub const RETRANSMIT_PCT: f64 = 0.1;
/// The MSS assumed to turn payload bytes into segments for [`RETRANSMIT_PCT`].
pub const NOMINAL_MSS_BYTES: f64 = 1448.0;
/// Payload × copies at least this share of the machine's copy bandwidth at the call size (and
/// at most [`LIMIT_EXCEEDED_PCT`]) make the copy bandwidth the limit, percent.
pub const COPY_LIMIT_PCT: f64 = 75.0;
/// A run with both ends on one kernel at least this share of the loopback TCP ceiling (and
/// at most [`LIMIT_EXCEEDED_PCT`]) is at the machine's limit, percent.
pub const LOOPBACK_CEILING_PCT: f64 = 90.0;
/// Other processes holding at least this much of one CPU over the window (summed) make a
/// test whose light threads waited for a CPU a busy host, not a CPU-bound test, percent.
pub const OTHERS_HOLD_PCT: f64 = 50.0;
/// Other processes holding at least this much of one CPU are listed as evidence, percent.
pub const OTHERS_SHOWN_PCT: f64 = 10.0;
/// A receive buffer at least this many times the bandwidth-delay product was not too small
/// for the path: a window it kept full means the reader fell behind.
pub const READER_BEHIND_BDP_FACTOR: f64 = 4.0;
/// A closed-loop rate within this distance of flows × burst / RTT is round-trip bound,
/// percent.
pub const ROUND_TRIP_MATCH_PCT: f64 = 20.0;

/// The senders' summed TCP_INFO times in direction `dir`: (busy, rwnd-limited,
/// sndbuf-limited) microseconds, if any sender reported them.
fn sender_times(reports: &[(HostRole, &SideReport)], dir: FlowDir) -> Option<(u64, u64, u64)> {
    let mut sum: Option<(u64, u64, u64)> = None;
    for (_, r) in reports {
        let Some(SideData::Stream(st)) = r.data.as_ref() else {
            continue;
        };
        for f in st
            .flows
            .iter()
            .filter(|f| f.dir == dir && f.role == Role::Sender)
        {
            let Some(ti) = f.socket.tcp_info.as_ref() else {
                continue;
            };
            let (Some(b), Some(rw), Some(sb)) =
                (ti.busy_us, ti.rwnd_limited_us, ti.sndbuf_limited_us)
            else {
                continue;
            };
            let s = sum.get_or_insert((0, 0, 0));
            s.0 += b;
            s.1 += rw;
            s.2 += sb;
        }
    }
    sum
}

/// The largest SO_RCVBUF the receivers in direction `dir` reported at close, bytes.
fn receiver_rcvbuf(reports: &[(HostRole, &SideReport)], dir: FlowDir) -> Option<u32> {
    flow_buffers(reports, dir, Role::Receiver).max()
}

/// Each `role` flow's buffer at close in direction `dir`, bytes: `SO_RCVBUF` of a receiving
/// flow, `SO_SNDBUF` of a sending one.
fn flow_buffers<'a>(
    reports: &'a [(HostRole, &SideReport)],
    dir: FlowDir,
    role: Role,
) -> impl Iterator<Item = u32> + 'a {
    reports
        .iter()
        .filter_map(|(_, r)| match r.data.as_ref() {
            Some(SideData::Stream(st)) => Some(st),
            _ => None,
        })
        .flat_map(|st| st.flows.iter())
        .filter(move |f| f.dir == dir && f.role == role)
        .filter_map(move |f| match role {
            Role::Receiver => f.socket.rcvbuf_bytes,
            Role::Sender => f.socket.sndbuf_bytes,
        })
}

/// The `role` flows' buffers at close in direction `dir` (see [`flow_buffers`]), summed,
/// bytes.
fn buffer_sum(reports: &[(HostRole, &SideReport)], dir: FlowDir, role: Role) -> u64 {
    flow_buffers(reports, dir, role).map(u64::from).sum()
}

/// The flows' summed buffers at close, where the kernel sized them: `rcvbuf` of the
/// receivers and `sndbuf` of the senders when the run set no `-w`; `sndbuf` is `None` too
/// when the senders' unsent data was already held back (`--notsent-lowat`).
#[derive(Debug, Clone, Copy, Default)]
struct AutotunedSums {
    rcvbuf_bytes: Option<u64>,
    sndbuf_bytes: Option<u64>,
}

/// What to try next on a stream run limited by `limiter`, with the flows' `autotuned`
/// buffers.
fn stream_suggestions(limiter: &Limiter, autotuned: AutotunedSums) -> Vec<Suggestion> {
    let many = |b: Option<u64>| b.is_some_and(|b| b >= MANY_BUFFERS_BYTES);
    match limiter {
        Limiter::Pacing { .. } => vec![Suggestion::HigherRate],
        // A busy receiver that falls behind keeps the window shut whatever its size; when
        // the autotuned buffers add up to more than caches hold, smaller fixed ones shorten
        // the time data waits in them, and so does holding unsent data in the senders.
        Limiter::ReceiveWindow {
            receiver_busy_pct: Some(_),
            ..
        } if many(autotuned.rcvbuf_bytes) => {
            let mut v = vec![Suggestion::CheaperReceiver, Suggestion::SmallerWindow];
            if many(autotuned.sndbuf_bytes) {
                v.push(Suggestion::NotsentLowat);
            }
            v.push(Suggestion::Profile);
            v
        }
        // A light reader that waited for a CPU other processes held: the host starved it.
        Limiter::ReceiveWindow {
            reader_starved: Some(_),
            ..
        } => vec![
            Suggestion::QuietHost,
            Suggestion::Placement,
            Suggestion::Profile,
        ],
        // A buffer many times what the path needed: a larger one cannot help.
        Limiter::ReceiveWindow {
            reader_behind: true,
            ..
        } => vec![
            Suggestion::CheaperReceiver,
            Suggestion::Placement,
            Suggestion::Profile,
        ],
        Limiter::ReceiveWindow {
            receiver_busy_pct: Some(_),
            ..
        } => vec![
            Suggestion::CheaperReceiver,
            Suggestion::LargerWindow,
            Suggestion::Profile,
        ],
        Limiter::ReceiveWindow { .. } | Limiter::SendBuffer { .. } | Limiter::SenderIdle { .. } => {
            vec![Suggestion::LargerWindow, Suggestion::MoreFlows]
        }
        Limiter::Cpu { .. } => vec![
            Suggestion::Profile,
            Suggestion::ZeroCopy,
            Suggestion::Placement,
        ],
        Limiter::Loss { .. } => vec![Suggestion::PathLoss],
        Limiter::Path { .. } => vec![Suggestion::PathBottleneck, Suggestion::PathLoss],
        Limiter::BusyHost { .. } => vec![Suggestion::QuietHost, Suggestion::Placement],
        Limiter::HostSteal { .. } => vec![Suggestion::DedicatedCpus],
        _ => vec![Suggestion::Profile, Suggestion::MoreFlows],
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// An end's data threads' run-queue wait, percent of its window.
fn run_delay_pct(c: &EndCpu) -> Option<f64> {
    c.threads_run_delay_ns
        .filter(|_| c.window_ns > 0)
        .map(|ns| 100.0 * ns as f64 / c.window_ns as f64)
}

/// What rule 4 found: the saturated CPU the test's own work kept busy (the limit, `cpu`), or
/// the one its light threads waited for while other processes held it (a busy host, named
/// after the path); either is the host's steal instead when the hypervisor took a quarter
/// of that CPU.
#[derive(Debug, Clone, Default, PartialEq)]
struct CpuFinding {
    cpu: Option<Limiter>,
    busy_host: Option<Limiter>,
}

/// CPU evidence (each end's busiest CPU, and the other processes that kept its host busy)
/// and what rule 4 finds.
fn cpu_evidence(cpu: &[EndCpu], evidence: &mut Vec<Evidence>) -> CpuFinding {
    let mut worst: Option<(u32, CpuBreakdown)> = None;
    for c in cpu {
        let (n, b) = c
            .busiest_used_cpu
            .zip(c.busiest_used)
            .unwrap_or((c.busiest_cpu, c.busiest));
        evidence.push(Evidence::BusiestCpu {
            host: c.host,
            cpu: n,
            busy_pct: b.busy_pct,
            softirq_pct: b.softirq_pct,
            cpus_used: c.cpus_used.clone(),
            threads_util_pct_of_one_cpu: Some(c.threads_util_pct_of_one_cpu),
            threads_run_delay_pct: run_delay_pct(c),
            steal_pct: Some(b.steal_pct),
        });
        if let Some(o) = c
            .other_util_pct_of_one_cpu
            .filter(|o| *o >= OTHERS_SHOWN_PCT)
        {
            evidence.push(Evidence::OtherProcesses {
                host: c.host,
                util_pct_of_one_cpu: o,
                top: c.other_processes.clone(),
            });
        }
        if worst.is_none_or(|(_, w)| b.busy_pct > w.busy_pct) {
            worst = Some((n, b));
        }
    }
    let Some((n, b)) = worst.filter(|(_, b)| b.busy_pct >= CPU_SATURATED_PCT) else {
        return CpuFinding::default();
    };
    let users: Vec<&EndCpu> = cpu
        .iter()
        .filter(|c| c.cpus_used.is_empty() || c.cpus_used.contains(&n))
        .collect();
    let host = (users.len() == 1).then(|| users[0].host);
    let worked = users
        .iter()
        .any(|c| c.threads_util_pct_of_one_cpu >= OWN_WORK_PCT);
    let waited = users
        .iter()
        .filter(|c| run_delay_pct(c).is_some_and(|p| p >= RUN_DELAY_PCT))
        .max_by(|a, b| {
            let d = |c: &&&EndCpu| run_delay_pct(c).unwrap_or(0.0);
            d(a).total_cmp(&d(b))
        });
    // A CPU the test needed (it worked or waited there) of which the hypervisor took a
    // quarter: the host's limit, in place of whichever of the two below it would be.
    let stolen = (b.steal_pct >= STEAL_LIMIT_PCT).then(|| Limiter::HostSteal {
        host,
        cpu: n,
        busy_pct: b.busy_pct,
        steal_pct: b.steal_pct,
        threads_util_pct_of_one_cpu: users
            .iter()
            .map(|c| c.threads_util_pct_of_one_cpu)
            .fold(0.0, f64::max),
    });
    let saturated = Limiter::Cpu {
        host,
        cpu: n,
        busy_pct: b.busy_pct,
        softirq_pct: b.softirq_pct,
        system_pct: b.system_pct,
        user_pct: b.user_pct,
    };
    if worked || b.softirq_pct >= OWN_WORK_PCT {
        return CpuFinding {
            cpu: Some(stolen.unwrap_or(saturated)),
            busy_host: None,
        };
    }
    let Some(w) = waited else {
        return CpuFinding::default();
    };
    // Light threads that waited: for other processes, when those held the CPU; else for
    // each other (two ends on one CPU) or for what could not be told apart (an older peer).
    match w
        .other_util_pct_of_one_cpu
        .filter(|o| *o >= OTHERS_HOLD_PCT)
    {
        Some(o) => CpuFinding {
            cpu: None,
            busy_host: Some(stolen.unwrap_or(Limiter::BusyHost {
                host,
                cpu: n,
                busy_pct: b.busy_pct,
                threads_util_pct_of_one_cpu: w.threads_util_pct_of_one_cpu,
                threads_run_delay_pct: run_delay_pct(w).unwrap_or(0.0),
                other_util_pct_of_one_cpu: o,
            })),
        },
        None => CpuFinding {
            cpu: Some(stolen.unwrap_or(saturated)),
            busy_host: None,
        },
    }
}

fn missing_common(cpu: &[EndCpu], server: bool, profiled: bool) -> Vec<Missing> {
    let mut m = Vec::new();
    if !server {
        m.push(Missing::ServerReport);
    }
    if cpu.is_empty() || (server && cpu.len() < 2) {
        m.push(Missing::Cpu);
    }
    if !profiled {
        m.push(Missing::Profile);
    }
    m
}

/// Each profiled end's largest category of classified busy time (neither idle nor
/// unsampled).
fn profile_evidence(profiles: &[EndProfile], evidence: &mut Vec<Evidence>) {
    for p in profiles {
        if let Some(top) = p
            .categories
            .iter()
            .filter(|c| {
                !matches!(
                    c.category,
                    ProfileCategory::Idle | ProfileCategory::Unsampled
                )
            })
            .max_by(|a, b| a.pct.total_cmp(&b.pct))
        {
            evidence.push(Evidence::ProfileTop {
                host: p.host,
                category: top.category,
                pct: top.pct,
            });
        }
    }
}

/// Rule 2 and the senders' idle time, from their TCP_INFO in the main direction `main`:
/// (the window or buffer limit, idle senders), with the senders' limits as evidence;
/// `None` when no sender reported its limited times. `rtts` are the senders' (minimum,
/// median smoothed) round trips, ns, for the bandwidth-delay product.
fn sender_rules(
    spec: &TestSpec,
    main: &DirectionSummary,
    reports: &[(HostRole, &SideReport)],
    cpu: &[EndCpu],
    rtts: Option<(u64, u64)>,
    evidence: &mut Vec<Evidence>,
) -> Option<(Option<Limiter>, Option<Limiter>)> {
    let (busy, rwnd, sndbuf) = sender_times(reports, main.dir)?;
    let window_us = main.sender_window_ns as f64 / 1e3 * f64::from(main.flows);
    let idle = (window_us > 0.0)
        .then(|| (100.0 * (1.0 - busy as f64 / window_us)).max(0.0))
        .filter(|p| *p >= IDLE_PCT)
        .map(|idle_pct| Limiter::SenderIdle {
            dir: main.dir,
            idle_pct,
        });
    let (rw, sb) = (pct(rwnd, busy), pct(sndbuf, busy));
    evidence.push(Evidence::SenderLimits {
        dir: main.dir,
        busy_us: busy,
        rwnd_limited_pct: rw,
        sndbuf_limited_pct: sb,
    });
    let window = if rw >= LIMITED_PCT && rw >= sb {
        let rcvbuf_bytes = receiver_rcvbuf(reports, main.dir);
        // The window the path needed at this rate: throughput × round trip, per flow.
        let bdp_bytes = rtts.map(|(_, srtt_ns)| {
            (main.receiver_throughput_bps / 8.0 * srtt_ns as f64
                / 1e9
                / f64::from(main.flows.max(1))) as u64
        });
        let reader_behind = rcvbuf_bytes.zip(bdp_bytes).is_some_and(|(buf, bdp)| {
            f64::from(buf) >= READER_BEHIND_BDP_FACTOR * bdp.max(1) as f64
        });
        let receiver_busy_pct =
            receiver_busy(reports, cpu, main.dir).filter(|b| *b >= RECEIVER_BUSY_PCT);
        // A reader that fell behind while its own threads were light: starved, if it waited
        // for a CPU that other processes held.
        let reader_starved = (reader_behind && receiver_busy_pct.is_none())
            .then(|| reader_starved(reports, cpu, main.dir))
            .flatten();
        Some(Limiter::ReceiveWindow {
            dir: main.dir,
            limited_pct: rw,
            receiver_busy_pct,
            rcvbuf_bytes,
            rcvbuf_autotuned: spec.common.window_bytes.is_none(),
            bdp_bytes,
            reader_behind,
            reader_starved,
        })
    } else if sb >= LIMITED_PCT {
        Some(Limiter::SendBuffer {
            dir: main.dir,
            limited_pct: sb,
        })
    } else {
        None
    };
    Some((window, idle))
}

/// The verdict on a stream run.
pub fn stream(
    spec: &TestSpec,
    s: &StreamSummary,
    reports: &[(HostRole, &SideReport)],
    cpu: &[EndCpu],
    profiles: &[EndProfile],
) -> Option<Verdict> {
    let profiled = !profiles.is_empty();
    let main = s
        .directions
        .iter()
        .max_by(|a, b| a.receiver_bytes.cmp(&b.receiver_bytes))?;
    let mut evidence = Vec::new();
    let mut missing = missing_common(cpu, reports.len() > 1, profiled);
    let mut limiter = None;
    if let Some(rate) = spec.rate_bps().filter(|r| *r > 0) {
        let target = rate as f64 * f64::from(main.flows);
        evidence.push(Evidence::Paced {
            target_bps: target,
            achieved_bps: main.receiver_throughput_bps,
        });
        let achieved_pct = 100.0 * main.receiver_throughput_bps / target.max(1.0);
        if achieved_pct >= PACED_ACHIEVED_PCT {
            limiter = Some(Limiter::Pacing {
                target_bps: target,
                achieved_pct,
            });
        }
    }
    let rtts = path::round_trips(reports, main.dir);
    if let Some((min_rtt_ns, srtt_ns)) = rtts {
        evidence.push(Evidence::RoundTrips {
            dir: main.dir,
            min_rtt_ns,
            srtt_ns,
        });
    }
    let senders = sender_rules(spec, main, reports, cpu, rtts, &mut evidence);
    if senders.is_none() {
        missing.push(Missing::SenderLimitedTimes);
    }
    let (window, idle) = senders.unwrap_or_default();
    limiter = limiter.or(window);
    let found = cpu_evidence(cpu, &mut evidence);
    profile_evidence(profiles, &mut evidence);
    limiter = limiter.or(found.cpu);
    for d in &s.directions {
        if d.retransmits > 0 {
            evidence.push(Evidence::Retransmits {
                dir: d.dir,
                retransmits: d.retransmits,
                dsack_segments: d.dsack_segments,
            });
        }
    }
    // Rule 5: a queue on the path (never over loopback, where there is no path).
    if let Some((min_rtt_ns, srtt_ns)) = rtts.filter(|(m, s)| path::queued(*m, *s)) {
        if limiter.is_none() && !path::over_loopback(reports) {
            limiter = Some(Limiter::Path {
                dir: main.dir,
                throughput_bps: main.receiver_throughput_bps,
                min_rtt_ns,
                srtt_ns,
            });
        }
    }
    limiter = limiter.or(found.busy_host).or(idle);
    let segments = main.sender_bytes as f64 / NOMINAL_MSS_BYTES;
    // A retransmission the receiver reports back as a duplicate (D-SACK) repaired no loss.
    let lost = main
        .retransmits
        .saturating_sub(main.dsack_segments.unwrap_or(0));
    if limiter.is_none() && lost > 0 && 100.0 * lost as f64 / segments.max(1.0) >= RETRANSMIT_PCT {
        limiter = Some(Limiter::Loss {
            dir: main.dir,
            retransmits: lost,
        });
    }
    let limiter = limiter.unwrap_or(Limiter::Undetermined);
    let autotuned = if spec.common.window_bytes.is_none() {
        let lowat = spec.tcp().and_then(|t| t.notsent_lowat_bytes);
        AutotunedSums {
            rcvbuf_bytes: Some(buffer_sum(reports, main.dir, Role::Receiver)),
            sndbuf_bytes: lowat
                .is_none()
                .then(|| buffer_sum(reports, main.dir, Role::Sender)),
        }
    } else {
        AutotunedSums::default()
    };
    let suggestions = stream_suggestions(&limiter, autotuned);
    if profiled {
        missing.retain(|m| *m != Missing::Profile);
    }
    Some(Verdict {
        limiter,
        evidence,
        suggestions: suggestions
            .into_iter()
            .filter(|s| !(profiled && *s == Suggestion::Profile))
            .collect(),
        missing,
    })
}

/// The verdict on a request/response run.
pub fn rr(r: &RrSummary, cpu: &[EndCpu], server: bool, profiles: &[EndProfile]) -> Option<Verdict> {
    let profiled = !profiles.is_empty();
    let lat = r.latency.as_ref()?;
    let mut evidence = Vec::new();
    let missing = missing_common(cpu, server, profiled);
    let found = cpu_evidence(cpu, &mut evidence);
    let mut cpu_limit = found.cpu;
    let mut busy_host = found.busy_host;
    if let Some(b) = &r.busy_poll {
        // Spinning keeps the CPUs busy whatever limits the rate.
        cpu_limit = None;
        busy_host = None;
        evidence.push(Evidence::BusyPolling {
            so_busy_poll_us: b.requested_us,
        });
    }
    profile_evidence(profiles, &mut evidence);
    let in_flight = f64::from(r.flows) * f64::from(r.burst.max(1));
    let allowed = if lat.mean_ns > 0.0 {
        in_flight * 1e9 / lat.mean_ns
    } else {
        0.0
    };
    let matches = allowed > 0.0
        && (100.0 * (r.transactions_per_s - allowed).abs() / allowed) <= ROUND_TRIP_MATCH_PCT;
    // A round trip that waits for a CPU other processes hold is the busy host's.
    let limiter = match cpu_limit.or(busy_host) {
        Some(c) => c,
        None if matches => Limiter::RoundTrip {
            rtt_mean_ns: lat.mean_ns,
            allowed_per_s: allowed,
            measured_per_s: r.transactions_per_s,
        },
        None => Limiter::Undetermined,
    };
    let suggestions = match &limiter {
        Limiter::Cpu { .. } => vec![Suggestion::Profile, Suggestion::Placement],
        Limiter::BusyHost { .. } => vec![Suggestion::QuietHost, Suggestion::Placement],
        Limiter::HostSteal { .. } => vec![Suggestion::DedicatedCpus],
        Limiter::RoundTrip { .. } => vec![
            Suggestion::MoreInFlight,
            Suggestion::Placement,
            Suggestion::BusyPoll,
            Suggestion::Profile,
        ],
        _ => vec![Suggestion::Profile],
    }
    .into_iter()
    .filter(|s| !(profiled && *s == Suggestion::Profile))
    .filter(|s| !(r.busy_poll.is_some() && *s == Suggestion::BusyPoll))
    .collect();
    Some(Verdict {
        limiter,
        evidence,
        suggestions,
        missing,
    })
}

#[cfg(test)]
mod tests;
