//! The receiving end of a window-limited stream: how busy it was (rule 2's
//! [`RECEIVER_BUSY_PCT`]) and whether other processes starved it of CPU.

use wirebench_model::result::EndCpu;
use wirebench_model::side::{HostRole, Role, SideData, SideReport};
use wirebench_model::spec::FlowDir;
use wirebench_model::verdict::StarvedReader;

use super::{run_delay_pct, OTHERS_HOLD_PCT, RECEIVER_BUSY_PCT, RUN_DELAY_PCT};

/// The one end that received in direction `dir` and sent nothing (else its threads' time
/// mixes both jobs), with its receiving flows; `None` when no end, or both, received.
fn receiving_end(reports: &[(HostRole, &SideReport)], dir: FlowDir) -> Option<(HostRole, usize)> {
    let mut receiving = reports
        .iter()
        .filter_map(|(host, r)| match r.data.as_ref() {
            Some(SideData::Stream(st)) => {
                let recv = st
                    .flows
                    .iter()
                    .filter(|f| f.dir == dir && f.role == Role::Receiver);
                let flows = recv.count();
                let sends = st.flows.iter().any(|f| f.role == Role::Sender);
                (flows > 0).then_some((*host, flows, sends))
            }
            _ => None,
        });
    let (host, flows, sends) = receiving.next()?;
    if sends || receiving.next().is_some() {
        return None;
    }
    Some((host, flows))
}

/// How busy the receiving end was in direction `dir`, percent: the larger of its data
/// threads' CPU time per thread that could run at once (its receiving flows, at most the
/// CPUs it could use) and, when those threads were pinned to fewer CPUs than the machine
/// has and the threads themselves used at least half of [`RECEIVER_BUSY_PCT`], the busy
/// share of the busiest of those CPUs (`/proc/stat`: a working receiver that shares its CPU
/// with anything falls behind the same way). Only when one end did all the receiving and
/// sent nothing (else its threads' time mixes both jobs).
pub(super) fn receiver_busy(
    reports: &[(HostRole, &SideReport)],
    cpu: &[EndCpu],
    dir: FlowDir,
) -> Option<f64> {
    let (host, flows) = receiving_end(reports, dir)?;
    let c = cpu.iter().find(|c| c.host == host)?;
    let pinned = !c.cpus_used.is_empty() && c.cpus_used.len() < c.cpus as usize;
    let cpus = if pinned {
        c.cpus_used.len()
    } else {
        c.cpus as usize
    };
    let threads = c.threads_util_pct_of_one_cpu / flows.min(cpus).max(1) as f64;
    // The busiest of the CPUs the end is pinned to (not the machine's busiest, which on a
    // machine both ends share may be the other end's CPU).
    let used_busy = c.busiest_used.map(|b| b.busy_pct).or_else(|| {
        c.cpus_used
            .contains(&c.busiest_cpu)
            .then_some(c.busiest.busy_pct)
    });
    let shared = (pinned && threads >= RECEIVER_BUSY_PCT / 2.0)
        .then_some(used_busy)
        .flatten();
    Some(threads.max(shared.unwrap_or(0.0)))
}

/// A receiving end (the one end that only received in direction `dir`) that other processes
/// starved: its data threads waited on a run queue at least [`RUN_DELAY_PCT`] % of the window
/// while processes other than wirebench's used at least [`OTHERS_HOLD_PCT`] % of one CPU on
/// its host. The caller asks only when the reader fell behind without being busy itself;
/// `None` when the end or its run-queue figure is unknown.
pub(super) fn reader_starved(
    reports: &[(HostRole, &SideReport)],
    cpu: &[EndCpu],
    dir: FlowDir,
) -> Option<StarvedReader> {
    let (host, _) = receiving_end(reports, dir)?;
    let c = cpu.iter().find(|c| c.host == host)?;
    let waited = run_delay_pct(c).filter(|p| *p >= RUN_DELAY_PCT)?;
    let others = c
        .other_util_pct_of_one_cpu
        .filter(|o| *o >= OTHERS_HOLD_PCT)?;
    Some(StarvedReader {
        host,
        threads_util_pct_of_one_cpu: c.threads_util_pct_of_one_cpu,
        threads_run_delay_pct: waited,
        other_util_pct_of_one_cpu: others,
    })
}
