//! The scheduler: which tests may start now. A pure state machine — the caller starts what
//! [`Scheduler::start_ready`] returns, reports each end with [`Scheduler::finish`] (a test
//! that failed or whose host was down ends the same way), and asks again.

use std::collections::BTreeSet;

use crate::topology::{Job, JobClass};

/// Whether a latency-only test may share a host with a throughput test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlap {
    /// One test per host at a time, whatever its class (the default).
    #[default]
    Exclusive,
    /// A latency-only test may run on hosts busy with a throughput test (it then measures
    /// latency under that load, which the plan asked for); still one latency-only test per
    /// host at a time, and a throughput test never shares a host with another throughput
    /// test.
    LatencyBesideThroughput,
}

/// A test the caller should start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// The job's id (its index in the job list).
    pub id: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    Done,
}

/// The scheduler over one job list.
#[derive(Debug)]
pub struct Scheduler {
    jobs: Vec<Job>,
    state: Vec<State>,
    /// Pending jobs by id (priority order).
    pending: BTreeSet<usize>,
    /// Per host: running throughput tests (0 or 1) and latency-only tests (0 or 1).
    throughput_on: Vec<u8>,
    latency_on: Vec<u8>,
    /// Hosts with no test at all.
    idle_hosts: usize,
    overlap: Overlap,
    running: usize,
}

impl Scheduler {
    /// A scheduler for `jobs` (ids must be their indices) over `hosts` hosts.
    ///
    /// # Panics
    /// If a job's id is not its index or a job names a host beyond `hosts`.
    pub fn new(hosts: usize, jobs: Vec<Job>, overlap: Overlap) -> Scheduler {
        for (i, j) in jobs.iter().enumerate() {
            assert_eq!(j.id, i, "job ids are their indices");
            assert!(
                j.hosts().all(|h| h < hosts),
                "job {i} names a host beyond {hosts}"
            );
        }
        Scheduler {
            state: vec![State::Pending; jobs.len()],
            pending: (0..jobs.len()).collect(),
            jobs,
            throughput_on: vec![0; hosts],
            latency_on: vec![0; hosts],
            idle_hosts: hosts,
            overlap,
            running: 0,
        }
    }

    /// The job list.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// Whether every job has finished.
    pub fn is_done(&self) -> bool {
        self.pending.is_empty() && self.running == 0
    }

    /// How many jobs run now.
    pub fn running(&self) -> usize {
        self.running
    }

    fn host_free_for(&self, h: usize, class: JobClass) -> bool {
        match (class, self.overlap) {
            (_, Overlap::Exclusive) => self.throughput_on[h] == 0 && self.latency_on[h] == 0,
            (JobClass::Throughput, Overlap::LatencyBesideThroughput) => self.throughput_on[h] == 0,
            (JobClass::LatencyOnly, Overlap::LatencyBesideThroughput) => self.latency_on[h] == 0,
        }
    }

    fn occupy(&mut self, id: usize, by: i8) {
        let class = self.jobs[id].class;
        let hosts: Vec<usize> = self.jobs[id].hosts().collect();
        for h in hosts {
            let was_idle = self.throughput_on[h] == 0 && self.latency_on[h] == 0;
            let slot = match class {
                JobClass::Throughput => &mut self.throughput_on[h],
                JobClass::LatencyOnly => &mut self.latency_on[h],
            };
            *slot = slot.wrapping_add_signed(by);
            let is_idle = self.throughput_on[h] == 0 && self.latency_on[h] == 0;
            match (was_idle, is_idle) {
                (true, false) => self.idle_hosts -= 1,
                (false, true) => self.idle_hosts += 1,
                _ => {}
            }
        }
    }

    /// The pending jobs that may start now, lowest id first, marked running: each one's
    /// hosts are free for its class, given the running jobs and the ones started before it
    /// in this call.
    pub fn start_ready(&mut self) -> Vec<Started> {
        let mut pending = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        for &id in &pending {
            // With exclusive hosts and fewer than two idle, nothing more can start.
            if self.overlap == Overlap::Exclusive && self.idle_hosts < 2 {
                break;
            }
            let class = self.jobs[id].class;
            if self.jobs[id].hosts().all(|h| self.host_free_for(h, class)) {
                // Occupied now, so the next candidates see these hosts busy.
                self.occupy(id, 1);
                self.state[id] = State::Running;
                self.running += 1;
                out.push(Started { id });
            }
        }
        for s in &out {
            pending.remove(&s.id);
        }
        self.pending = pending;
        out
    }

    /// Job `id` ended (completed, failed, or its host was down): its hosts are free.
    ///
    /// # Panics
    /// If the job is not running.
    pub fn finish(&mut self, id: usize) {
        assert_eq!(self.state[id], State::Running, "job {id} is not running");
        self.state[id] = State::Done;
        self.running -= 1;
        self.occupy(id, -1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{jobs, Topology};

    /// Runs every job to the end with unit durations; returns each round's started ids.
    fn rounds(s: &mut Scheduler) -> Vec<Vec<usize>> {
        let mut out = vec![];
        while !s.is_done() {
            let started: Vec<usize> = s.start_ready().into_iter().map(|x| x.id).collect();
            assert!(!started.is_empty(), "no progress");
            for &id in &started {
                s.finish(id);
            }
            out.push(started);
        }
        out
    }

    #[test]
    fn a_full_mesh_runs_in_its_tournament_rounds() {
        for n in [2, 5, 8, 16] {
            let js = jobs(n, &Topology::FullMesh, &[JobClass::Throughput], 1).unwrap();
            let mut s = Scheduler::new(n, js, Overlap::Exclusive);
            let want = if n % 2 == 0 { 2 * (n - 1) } else { 2 * n };
            assert_eq!(rounds(&mut s).len(), want, "n={n}");
        }
    }

    #[test]
    fn a_star_runs_one_test_at_a_time_and_an_incast_once() {
        let js = jobs(5, &Topology::Star { center: 0 }, &[JobClass::Throughput], 1).unwrap();
        let r = rounds(&mut Scheduler::new(5, js, Overlap::Exclusive));
        assert_eq!(r, vec![vec![0], vec![1], vec![2], vec![3]]);
        let js = jobs(
            5,
            &Topology::Incast { center: 0 },
            &[JobClass::Throughput],
            1,
        )
        .unwrap();
        let r = rounds(&mut Scheduler::new(5, js, Overlap::Exclusive));
        assert_eq!(r, vec![vec![0]]);
    }

    #[test]
    fn latency_tests_share_hosts_only_where_the_plan_allows() {
        let two = [JobClass::Throughput, JobClass::LatencyOnly];
        let js = jobs(2, &Topology::Pairs(vec![(0, 1)]), &two, 1).unwrap();
        let excl = rounds(&mut Scheduler::new(2, js.clone(), Overlap::Exclusive));
        assert_eq!(excl, vec![vec![0], vec![1]]);
        let beside = rounds(&mut Scheduler::new(2, js, Overlap::LatencyBesideThroughput));
        assert_eq!(beside, vec![vec![0, 1]]);
    }

    #[test]
    fn a_long_test_does_not_block_disjoint_ones() {
        // 0→1 runs long; 2→3 and 3→2 go on beside it.
        let js = jobs(
            4,
            &Topology::Pairs(vec![(0, 1), (2, 3), (3, 2), (1, 0)]),
            &[JobClass::Throughput],
            1,
        )
        .unwrap();
        let mut s = Scheduler::new(4, js, Overlap::Exclusive);
        let first: Vec<usize> = s.start_ready().iter().map(|x| x.id).collect();
        assert_eq!(first, vec![0, 1]);
        s.finish(1);
        assert_eq!(s.start_ready(), vec![Started { id: 2 }]);
        s.finish(2);
        assert!(s.start_ready().is_empty(), "1→0 waits for 0→1");
        s.finish(0);
        assert_eq!(s.start_ready(), vec![Started { id: 3 }]);
        s.finish(3);
        assert!(s.is_done());
    }
}
