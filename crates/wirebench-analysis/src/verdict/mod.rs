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
//!    one kernel). When the hypervisor took at least [`STEAL_LIMIT_PCT`] % of that saturated
//!    CPU's window (`steal`: a virtual CPU the host ran something else on while this guest
//!    had work for it), the **host's steal** is the limit instead, whoever's work the rest
//!    was: the test got that much less than a CPU, and no change to the test or this
//!    guest gives it back.
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

/// What rule 4 found: the saturated CPU the test's own work kept busy, or the hypervisor
/// took a large share of (the limit, `cpu`), or the one its light threads waited for while
/// other processes held it (a busy host, named after the path).
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
    if b.steal_pct >= STEAL_LIMIT_PCT {
        return CpuFinding {
            cpu: Some(Limiter::HostSteal {
                host,
                cpu: n,
                busy_pct: b.busy_pct,
                steal_pct: b.steal_pct,
                threads_util_pct_of_one_cpu: users
                    .iter()
                    .map(|c| c.threads_util_pct_of_one_cpu)
                    .fold(0.0, f64::max),
            }),
            busy_host: None,
        };
    }
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
            cpu: Some(saturated),
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
            busy_host: Some(Limiter::BusyHost {
                host,
                cpu: n,
                busy_pct: b.busy_pct,
                threads_util_pct_of_one_cpu: w.threads_util_pct_of_one_cpu,
                threads_run_delay_pct: run_delay_pct(w).unwrap_or(0.0),
                other_util_pct_of_one_cpu: o,
            }),
        },
        None => CpuFinding {
            cpu: Some(saturated),
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
mod tests {
    use super::*;
    use crate::tests::{flow_side, stream_report};
    use wirebench_stats::cpu::CpuBreakdown;

    /// The server's CPU figures: its data threads at `threads_pct` of one CPU, pinned to
    /// `cpus_used` of 2, the busiest CPU `busiest` at `busiest_pct`.
    fn server_cpu(threads_pct: f64, cpus_used: Vec<u32>, busiest: u32, busiest_pct: f64) -> EndCpu {
        EndCpu {
            host: HostRole::Server,
            window_ns: 1_000_000_000,
            cpus: 2,
            system_busy_pct: busiest_pct / 2.0,
            system: CpuBreakdown::default(),
            busiest_cpu: busiest,
            busiest: CpuBreakdown {
                busy_pct: busiest_pct,
                ..CpuBreakdown::default()
            },
            cpus_used,
            threads_user_ns: 0,
            threads_system_ns: 0,
            threads_util_pct_of_one_cpu: threads_pct,
            threads_run_delay_ns: None,
            other_util_pct_of_one_cpu: None,
            other_processes: Vec::new(),
            busiest_used_cpu: None,
            busiest_used: None,
            service_demand_us_per_kb: None,
            threads_service_demand_us_per_kb: None,
            service_demand_us_per_tx: None,
            threads_service_demand_us_per_tx: None,
        }
    }

    fn busy(server_sends: bool, cpu: EndCpu) -> Option<f64> {
        let fwd = FlowDir::ClientToServer;
        let mut flows = vec![flow_side(0, fwd, Role::Receiver, 1, 1, 0, 1)];
        if server_sends {
            flows.push(flow_side(
                1,
                FlowDir::ServerToClient,
                Role::Sender,
                1,
                1,
                0,
                1,
            ));
        }
        let client = stream_report(
            HostRole::Client,
            vec![flow_side(0, fwd, Role::Sender, 1, 1, 0, 1)],
            None,
        );
        let server = stream_report(HostRole::Server, flows, None);
        let reports = [(HostRole::Client, &client), (HostRole::Server, &server)];
        receiver_busy(&reports, &[cpu], fwd)
    }

    /// The server end receiving alone in the forward direction, and what `reader_starved`
    /// finds with its CPU figures `cpu`.
    fn starved(cpu: EndCpu) -> Option<wirebench_model::verdict::StarvedReader> {
        let fwd = FlowDir::ClientToServer;
        let client = stream_report(
            HostRole::Client,
            vec![flow_side(0, fwd, Role::Sender, 1, 1, 0, 1)],
            None,
        );
        let server = stream_report(
            HostRole::Server,
            vec![flow_side(0, fwd, Role::Receiver, 1, 1, 0, 1)],
            None,
        );
        let reports = [(HostRole::Client, &client), (HostRole::Server, &server)];
        reader_starved(&reports, &[cpu], fwd)
    }

    /// A light receiver that waited a tenth of the window while other processes held half a
    /// CPU or more was starved; without the wait, or without the other processes, it was
    /// not (it was slow, or the two ends waited for each other); a starved reader's first
    /// suggestion is a quieter host.
    #[test]
    fn a_reader_that_waited_while_others_held_its_cpu_was_starved() {
        let mut c = server_cpu(12.0, vec![1], 1, 100.0);
        c.threads_run_delay_ns = Some(600_000_000);
        c.other_util_pct_of_one_cpu = Some(150.0);
        let s = starved(c.clone()).expect("starved");
        assert_eq!(s.host, HostRole::Server);
        assert!((s.threads_run_delay_pct - 60.0).abs() < 1e-9, "{s:?}");
        assert_eq!(
            (s.threads_util_pct_of_one_cpu, s.other_util_pct_of_one_cpu),
            (12.0, 150.0)
        );
        let mut quiet = c.clone();
        quiet.other_util_pct_of_one_cpu = Some(20.0);
        assert_eq!(starved(quiet), None, "the ends waited for each other");
        let mut ran = c.clone();
        ran.threads_run_delay_ns = Some(50_000_000);
        assert_eq!(starved(ran), None, "it hardly waited");
        let mut older = c;
        older.threads_run_delay_ns = None;
        assert_eq!(starved(older), None, "no run-queue figure (an older peer)");
        let limiter = Limiter::ReceiveWindow {
            dir: FlowDir::ClientToServer,
            limited_pct: 70.0,
            receiver_busy_pct: None,
            rcvbuf_bytes: Some(8 << 20),
            rcvbuf_autotuned: false,
            bdp_bytes: Some(100_000),
            reader_behind: true,
            reader_starved: Some(s),
        };
        let got = stream_suggestions(&limiter, AutotunedSums::default());
        assert_eq!(got[0], Suggestion::QuietHost, "{got:?}");
        assert!(!got.contains(&Suggestion::CheaperReceiver), "{got:?}");
    }

    /// A busy receiver behind many autotuned buffers is told to try smaller fixed ones; one
    /// flow, a fixed window or a receiver with time to spare keeps the old advice.
    #[test]
    fn many_autotuned_buffers_behind_a_busy_receiver_suggest_smaller_ones() {
        let rw = |busy: Option<f64>| Limiter::ReceiveWindow {
            dir: FlowDir::ClientToServer,
            limited_pct: 68.0,
            receiver_busy_pct: busy,
            rcvbuf_bytes: Some(24 << 20),
            rcvbuf_autotuned: true,
            bdp_bytes: None,
            reader_behind: false,
            reader_starved: None,
        };
        let sums = |rcvbuf_bytes, sndbuf_bytes| AutotunedSums {
            rcvbuf_bytes,
            sndbuf_bytes,
        };
        let many = Some(10_000 * (2 << 20));
        assert_eq!(
            stream_suggestions(&rw(Some(90.0)), sums(many, None)),
            vec![
                Suggestion::CheaperReceiver,
                Suggestion::SmallerWindow,
                Suggestion::Profile
            ]
        );
        // Many autotuned send buffers too (and no --notsent-lowat): hold unsent data back.
        assert_eq!(
            stream_suggestions(&rw(Some(90.0)), sums(many, many)),
            vec![
                Suggestion::CheaperReceiver,
                Suggestion::SmallerWindow,
                Suggestion::NotsentLowat,
                Suggestion::Profile
            ]
        );
        let few = Some(24 << 20);
        for (limiter, bufs) in [
            (rw(Some(90.0)), sums(few, many)),
            (rw(Some(90.0)), sums(None, None)),
            (rw(None), sums(many, many)),
        ] {
            let got = stream_suggestions(&limiter, bufs);
            assert!(!got.contains(&Suggestion::NotsentLowat), "{got:?}");
            assert!(!got.contains(&Suggestion::SmallerWindow), "{got:?}");
            assert!(got.contains(&Suggestion::LargerWindow), "{got:?}");
        }
        // `-w 8M` on loopback: a 16 MiB buffer against a 62 KB bandwidth-delay product is
        // not too small; the reader fell behind, so no larger window is suggested.
        let behind = Limiter::ReceiveWindow {
            dir: FlowDir::ClientToServer,
            limited_pct: 68.0,
            receiver_busy_pct: None,
            rcvbuf_bytes: Some(16 << 20),
            rcvbuf_autotuned: false,
            bdp_bytes: Some(62_000),
            reader_behind: true,
            reader_starved: None,
        };
        let got = stream_suggestions(&behind, sums(None, None));
        assert_eq!(got[0], Suggestion::CheaperReceiver, "{got:?}");
        assert!(!got.contains(&Suggestion::LargerWindow), "{got:?}");
    }

    /// Rule 4: a saturated CPU is the limit only when the test's own work ran or waited there.
    #[test]
    fn a_cpu_busy_with_another_processs_work_is_evidence_not_the_limit() {
        let limit = |c: &EndCpu| cpu_evidence(std::slice::from_ref(c), &mut Vec::new()).cpu;
        // Unpinned, next to a process spinning on CPU 1: the threads used 0.2 % of a CPU
        // and waited 0.7 % of the window.
        let mut c = server_cpu(0.2, vec![0, 1], 1, 100.0);
        c.threads_run_delay_ns = Some(7_000_000);
        let mut ev = Vec::new();
        assert_eq!(
            cpu_evidence(std::slice::from_ref(&c), &mut ev),
            CpuFinding::default()
        );
        match &ev[..] {
            [Evidence::BusiestCpu {
                cpu: 1,
                threads_util_pct_of_one_cpu: Some(u),
                threads_run_delay_pct: Some(d),
                ..
            }] => {
                assert_eq!(*u, 0.2);
                assert!((d - 0.7).abs() < 1e-9, "{d}");
            }
            e => panic!("{e:?}"),
        }
        // Waiting a tenth of the window for a CPU makes it the limit.
        c.threads_run_delay_ns = Some(100_000_000);
        assert!(matches!(
            limit(&c),
            Some(Limiter::Cpu {
                cpu: 1,
                host: Some(HostRole::Server),
                ..
            })
        ));
        // So does using a quarter of a CPU, without a run-queue figure (an older peer).
        c.threads_run_delay_ns = None;
        c.threads_util_pct_of_one_cpu = 25.0;
        assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
        // Or network softirq taking a quarter of it.
        c.threads_util_pct_of_one_cpu = 1.0;
        assert_eq!(limit(&c), None);
        c.busiest.softirq_pct = 30.0;
        assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
        // Light threads that waited a tenth of the window while other processes held one and a
        // half CPUs: the host was busy, the test not CPU-bound.
        c.busiest.softirq_pct = 0.0;
        c.threads_run_delay_ns = Some(100_000_000);
        c.other_util_pct_of_one_cpu = Some(150.0);
        let mut ev = Vec::new();
        let found = cpu_evidence(std::slice::from_ref(&c), &mut ev);
        assert_eq!(found.cpu, None);
        assert!(
            matches!(
                found.busy_host,
                Some(Limiter::BusyHost {
                    cpu: 1,
                    other_util_pct_of_one_cpu,
                    ..
                }) if other_util_pct_of_one_cpu == 150.0
            ),
            "{found:?}"
        );
        assert!(
            ev.iter()
                .any(|e| matches!(e, Evidence::OtherProcesses { .. })),
            "{ev:?}"
        );
        // The same wait with other processes nearly idle: the ends waited for each other.
        c.other_util_pct_of_one_cpu = Some(5.0);
        assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
        // Threads that used a quarter of the CPU are CPU-bound, whoever else was there.
        c.other_util_pct_of_one_cpu = Some(150.0);
        c.threads_util_pct_of_one_cpu = 30.0;
        assert!(matches!(limit(&c), Some(Limiter::Cpu { cpu: 1, .. })));
        // Pinned to CPU 0: the busiest CPU it could use decides, not the machine's busiest.
        let mut p = server_cpu(90.0, vec![0], 1, 100.0);
        p.busiest_used_cpu = Some(0);
        p.busiest_used = Some(CpuBreakdown {
            busy_pct: 95.0,
            ..CpuBreakdown::default()
        });
        assert!(matches!(limit(&p), Some(Limiter::Cpu { cpu: 0, .. })));
        p.busiest_used = Some(CpuBreakdown {
            busy_pct: 60.0,
            ..CpuBreakdown::default()
        });
        assert_eq!(limit(&p), None);
    }

    /// Rule 4, a virtual CPU: a saturated CPU the hypervisor took a quarter or more of is
    /// the host's limit, whatever the test's threads did; less steal leaves rule 4 as it was,
    /// and the evidence carries the steal either way. The breakdowns come from two
    /// `/proc/stat` readings, as a run takes them.
    #[test]
    fn a_saturated_cpu_the_hypervisor_took_is_the_hosts_limit() {
        use wirebench_stats::cpu::{parse_proc_stat, system_utilization};
        // One second (100 ticks per CPU): CPU 1 busy all of it, `steal_ticks` of it stolen,
        // the rest system time; CPU 0 idle.
        let breakdown = |steal_ticks: u64| {
            let before = "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n\
                          cpu1 0 0 0 0 0 0 0 0 0 0\n";
            let after = format!(
                "cpu  0 0 {sys} 100 0 0 0 {steal_ticks} 0 0\ncpu0 0 0 0 100 0 0 0 0 0 0\n\
                 cpu1 0 0 {sys} 0 0 0 0 {steal_ticks} 0 0\n",
                sys = 100 - steal_ticks
            );
            let u = system_utilization(
                &parse_proc_stat(before).unwrap(),
                &parse_proc_stat(&after).unwrap(),
                1_000_000_000,
            )
            .unwrap();
            (u.busiest_cpu, u.busiest)
        };
        let end = |steal_ticks: u64, threads_pct: f64| {
            let (n, b) = breakdown(steal_ticks);
            let mut c = server_cpu(threads_pct, vec![0, 1], n, b.busy_pct);
            c.busiest = b;
            c
        };
        // Half the window stolen, the test's threads at half a CPU: the host's limit, not
        // the test's CPU.
        let c = end(50, 50.0);
        assert_eq!(c.busiest_cpu, 1);
        let mut ev = Vec::new();
        let found = cpu_evidence(std::slice::from_ref(&c), &mut ev);
        match &found.cpu {
            Some(Limiter::HostSteal {
                host: Some(HostRole::Server),
                cpu: 1,
                busy_pct,
                steal_pct,
                threads_util_pct_of_one_cpu,
            }) => {
                assert!((busy_pct - 100.0).abs() < 1e-9, "{busy_pct}");
                assert!((steal_pct - 50.0).abs() < 1e-9, "{steal_pct}");
                assert_eq!(*threads_util_pct_of_one_cpu, 50.0);
            }
            f => panic!("{f:?}"),
        }
        assert_eq!(found.busy_host, None);
        assert!(
            matches!(ev[..], [Evidence::BusiestCpu { steal_pct: Some(p), .. }] if (p - 50.0).abs() < 1e-9),
            "{ev:?}"
        );
        // Light threads that waited while other processes ran: still the host's steal, not
        // the busy host, once the hypervisor took a quarter of the CPU.
        let mut c = end(25, 1.0);
        c.threads_run_delay_ns = Some(300_000_000);
        c.other_util_pct_of_one_cpu = Some(70.0);
        let found = cpu_evidence(std::slice::from_ref(&c), &mut Vec::new());
        assert!(
            matches!(found.cpu, Some(Limiter::HostSteal { cpu: 1, .. })),
            "{found:?}"
        );
        assert_eq!(found.busy_host, None);
        // Below a quarter: rule 4 as before (the test's work kept the CPU busy), the steal
        // kept as evidence.
        let c = end(20, 80.0);
        let mut ev = Vec::new();
        let found = cpu_evidence(std::slice::from_ref(&c), &mut ev);
        assert!(
            matches!(found.cpu, Some(Limiter::Cpu { cpu: 1, .. })),
            "{found:?}"
        );
        assert!(
            matches!(ev[..], [Evidence::BusiestCpu { steal_pct: Some(p), .. }] if (p - 20.0).abs() < 1e-9),
            "{ev:?}"
        );
        // Steal on a CPU that was not saturated limits nothing.
        let mut c = end(50, 30.0);
        c.busiest.busy_pct = 80.0;
        assert_eq!(
            cpu_evidence(std::slice::from_ref(&c), &mut Vec::new()),
            CpuFinding::default()
        );
        // What is suggested: CPUs the host does not share, nothing about the test itself.
        let steal = Limiter::HostSteal {
            host: None,
            cpu: 1,
            busy_pct: 100.0,
            steal_pct: 50.0,
            threads_util_pct_of_one_cpu: 50.0,
        };
        assert_eq!(
            stream_suggestions(&steal, AutotunedSums::default()),
            vec![Suggestion::DedicatedCpus]
        );
    }

    #[test]
    fn the_receivers_business_is_its_threads_or_the_cpu_it_was_pinned_to() {
        // Unpinned: its threads' time, whatever the busiest CPU.
        assert_eq!(
            busy(false, server_cpu(87.0, vec![0, 1], 0, 100.0)),
            Some(87.0)
        );
        // Pinned to CPU 1, working, and CPU 1 full (something else shared it).
        assert_eq!(
            busy(false, server_cpu(50.0, vec![1], 1, 100.0)),
            Some(100.0)
        );
        // Pinned but idle (a tiny window): the full CPU is someone else's business.
        assert_eq!(busy(false, server_cpu(10.0, vec![1], 1, 100.0)), Some(10.0));
        // The busiest CPU is not the receiver's.
        assert_eq!(busy(false, server_cpu(50.0, vec![1], 0, 100.0)), Some(50.0));
        // An end that also sent: its threads' time is not the receiver's alone.
        assert_eq!(busy(true, server_cpu(87.0, vec![1], 1, 100.0)), None);
    }
}
