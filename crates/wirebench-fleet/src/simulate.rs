//! The scheduler run on paper: every job takes a given time, the clock jumps from one end to
//! the next. Gives the wall time of a plan of any size and checks, while it runs, that no
//! host is ever in two throughput tests.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::schedule::{Overlap, Scheduler};
use crate::topology::{Job, JobClass};

/// What a simulated plan took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Simulation {
    /// From the first start to the last end, milliseconds.
    pub wall_ms: u64,
    /// Sum of every job's duration: the wall time of running them one at a time, ms.
    pub serial_ms: u64,
    /// The most jobs running at once.
    pub max_parallel: usize,
    /// How many times the scheduler was asked for jobs to start (one per distinct end
    /// time: with equal durations, the number of rounds).
    pub rounds: usize,
}

/// Runs `jobs` over `hosts` hosts through the [`Scheduler`], job `j` taking `duration_ms(j)`.
///
/// # Panics
/// If a host is ever in two throughput tests at once (the scheduler's promise).
pub fn simulate(
    hosts: usize,
    jobs: Vec<Job>,
    overlap: Overlap,
    duration_ms: impl Fn(&Job) -> u64,
) -> Simulation {
    let serial_ms = jobs.iter().map(&duration_ms).sum();
    let mut s = Scheduler::new(hosts, jobs, overlap);
    let mut ends: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut in_throughput = vec![false; hosts];
    let (mut now, mut max_parallel, mut rounds) = (0u64, 0usize, 0usize);
    while !s.is_done() {
        rounds += 1;
        for st in s.start_ready() {
            let job = &s.jobs()[st.id];
            if job.class == JobClass::Throughput {
                for h in job.hosts() {
                    assert!(!in_throughput[h], "host {h} in two throughput tests");
                    in_throughput[h] = true;
                }
            }
            ends.push(Reverse((now + duration_ms(job), st.id)));
        }
        max_parallel = max_parallel.max(s.running());
        // Every job ending at the next end time.
        let Some(Reverse((t, _))) = ends.peek().copied() else {
            panic!("nothing runs and nothing can start");
        };
        now = t;
        while let Some(Reverse((t, id))) = ends.peek().copied() {
            if t != now {
                break;
            }
            ends.pop();
            if s.jobs()[id].class == JobClass::Throughput {
                let hs: Vec<usize> = s.jobs()[id].hosts().collect();
                for h in hs {
                    in_throughput[h] = false;
                }
            }
            s.finish(id);
        }
    }
    Simulation {
        wall_ms: now,
        serial_ms,
        max_parallel,
        rounds,
    }
}
