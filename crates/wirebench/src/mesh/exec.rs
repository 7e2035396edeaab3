//! Running a mesh's jobs: the fleet's [`Scheduler`] says which may start, each started job
//! runs on its own thread (an incast's clients on one thread each, at once), and a job's
//! end frees its hosts. The tests themselves are run by a [`TestRunner`], so this loop is
//! tested with a fake one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use wirebench_fleet::{Job, Overlap, Scheduler};
use wirebench_model::result::RunResult;
use wirebench_net::runner::unix_ms;

/// The most test threads at once (an incast's clients count one each).
pub const MAX_THREADS: usize = 64;

/// Runs one test of the plan between two hosts.
pub trait TestRunner: Sync {
    /// Test `test` (index into the plan's tests) with host `client` running the client
    /// against host `server`'s daemon (indices into the resolved hosts). A host that is down
    /// or refuses gives a failed result saying why; never panics for a peer's doing.
    fn run(&self, client: usize, server: usize, test: usize) -> RunResult;
}

/// One test run: the pair, the job it belongs to, its span on the coordinator's clock and
/// its result.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The job's id.
    pub job: usize,
    /// The client host.
    pub client: usize,
    /// The server host.
    pub server: usize,
    /// The plan's test.
    pub test: usize,
    /// The repetition.
    pub repetition: u32,
    /// When the runner was called, ms since the epoch.
    pub started_unix_ms: u64,
    /// When it returned.
    pub ended_unix_ms: u64,
    /// The result.
    pub result: RunResult,
}

fn run_job(job: &Job, runner: &dyn TestRunner) -> Vec<Outcome> {
    let one = |client: usize| {
        let started_unix_ms = unix_ms();
        let result = runner.run(client, job.server, job.test);
        Outcome {
            job: job.id,
            client,
            server: job.server,
            test: job.test,
            repetition: job.repetition,
            started_unix_ms,
            ended_unix_ms: unix_ms(),
            result,
        }
    };
    if job.clients.len() == 1 {
        return vec![one(job.clients[0])];
    }
    // An incast: every client at once.
    std::thread::scope(|s| {
        let handles: Vec<_> = job
            .clients
            .iter()
            .map(|&c| s.spawn(move || one(c)))
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// Runs `jobs` over `hosts` hosts: every job whose hosts are free starts at once, on its
/// own thread; `seen` is called with each job's outcomes as it ends (from this thread).
/// Stops starting jobs once `interrupt` is set (the running ones end first). Returns
/// whether every job ran.
pub fn execute(
    hosts: usize,
    jobs: Vec<Job>,
    overlap: Overlap,
    runner: &dyn TestRunner,
    interrupt: &AtomicBool,
    seen: &mut dyn FnMut(Vec<Outcome>),
) -> bool {
    let mut sched = Scheduler::new(hosts, jobs, overlap);
    let (tx, rx) = mpsc::channel::<(usize, Vec<Outcome>)>();
    std::thread::scope(|s| {
        // Started by the scheduler (their hosts reserved) but waiting for a thread.
        let mut queued: VecDeque<usize> = VecDeque::new();
        let mut threads = 0usize;
        let mut in_flight = 0usize;
        loop {
            if !interrupt.load(Ordering::Relaxed) {
                queued.extend(sched.start_ready().into_iter().map(|st| st.id));
            }
            while let Some(&id) = queued.front() {
                let width = sched.jobs()[id].clients.len();
                if threads > 0 && threads + width > MAX_THREADS {
                    break;
                }
                queued.pop_front();
                if interrupt.load(Ordering::Relaxed) {
                    sched.finish(id);
                    continue;
                }
                threads += width;
                in_flight += 1;
                let job = sched.jobs()[id].clone();
                let tx = tx.clone();
                s.spawn(move || {
                    let _ = tx.send((job.id, run_job(&job, runner)));
                });
            }
            if in_flight == 0 {
                break;
            }
            let Ok((id, outcomes)) = rx.recv() else { break };
            in_flight -= 1;
            threads -= sched.jobs()[id].clients.len();
            sched.finish(id);
            seen(outcomes);
        }
    });
    sched.is_done() && !interrupt.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;
    use wirebench_fleet::topology::jobs;
    use wirebench_fleet::{JobClass, Topology};
    use wirebench_model::error::{ErrorInfo, ErrorKind};
    use wirebench_model::result::RunStatus;
    use wirebench_net::runner::failed_result;

    /// How long a fake test takes. Tests that start together must overlap by their spans:
    /// 100 ms leaves room for thread starts delayed on a machine whose two CPUs run dozens
    /// of other tests (15 ms did not, once, beside 32 test threads of the workspace's unit
    /// tests).
    const FAKE_TEST: Duration = Duration::from_millis(100);

    /// Sleeps [`FAKE_TEST`] per test; host `down` refuses at once.
    struct Fake {
        down: Option<usize>,
        calls: Mutex<Vec<(usize, usize)>>,
    }

    impl TestRunner for Fake {
        fn run(&self, client: usize, server: usize, _test: usize) -> RunResult {
            self.calls.lock().unwrap().push((client, server));
            if Some(client) == self.down || Some(server) == self.down {
                return failed_result(
                    None,
                    None,
                    false,
                    ErrorInfo::new(ErrorKind::Connect, "connection refused".to_string()),
                );
            }
            std::thread::sleep(FAKE_TEST);
            let mut r = failed_result(
                None,
                None,
                false,
                ErrorInfo::new(ErrorKind::Usage, "x".to_string()),
            );
            r.status = RunStatus::Completed;
            r.error = None;
            r
        }
    }

    fn run(n: usize, t: &Topology, down: Option<usize>) -> Vec<Outcome> {
        let fake = Fake {
            down,
            calls: Mutex::new(vec![]),
        };
        let js = jobs(n, t, &[JobClass::Throughput], 1).unwrap();
        let mut all = vec![];
        let done = execute(
            n,
            js,
            Overlap::Exclusive,
            &fake,
            &AtomicBool::new(false),
            &mut |o| all.extend(o),
        );
        assert!(done);
        all
    }

    /// No host in two tests whose spans overlap (from the outcomes' own times).
    fn exclusive(all: &[Outcome]) -> bool {
        all.iter().enumerate().all(|(i, a)| {
            all[i + 1..].iter().all(|b| {
                let share = [a.client, a.server]
                    .iter()
                    .any(|h| *h == b.client || *h == b.server);
                let overlap =
                    a.started_unix_ms < b.ended_unix_ms && b.started_unix_ms < a.ended_unix_ms;
                a.job == b.job || !(share && overlap)
            })
        })
    }

    #[test]
    fn a_full_mesh_runs_every_pair_once_with_exclusive_hosts_in_parallel() {
        let all = run(6, &Topology::FullMesh, None);
        let mut pairs: Vec<(usize, usize)> = all.iter().map(|o| (o.client, o.server)).collect();
        pairs.sort();
        pairs.dedup();
        assert_eq!((all.len(), pairs.len()), (30, 30));
        assert!(exclusive(&all));
        // Disjoint pairs ran at once: 10 rounds of a fake test, far less than 30 in a row.
        let span = all.iter().map(|o| o.ended_unix_ms).max().unwrap()
            - all.iter().map(|o| o.started_unix_ms).min().unwrap();
        let at_once = all
            .iter()
            .filter(|a| {
                all.iter().any(|b| {
                    b.job != a.job
                        && a.started_unix_ms < b.ended_unix_ms
                        && b.started_unix_ms < a.ended_unix_ms
                })
            })
            .count();
        assert!(at_once > 0, "no two tests overlapped in {span} ms");
    }

    #[test]
    fn a_down_host_is_recorded_and_the_rest_completes() {
        let all = run(4, &Topology::FullMesh, Some(2));
        assert_eq!(all.len(), 12);
        for o in &all {
            let touches = o.client == 2 || o.server == 2;
            assert_eq!(
                o.result.status == RunStatus::Completed,
                !touches,
                "{}→{}",
                o.client,
                o.server
            );
            if touches {
                let e = o.result.error.as_ref().expect("the reason");
                assert_eq!(e.kind, ErrorKind::Connect);
            }
        }
    }

    #[test]
    fn an_incast_runs_its_clients_at_once() {
        let all = run(5, &Topology::Incast { center: 0 }, None);
        assert_eq!(all.len(), 4);
        assert!(all.iter().all(|o| o.server == 0 && o.job == 0));
        let latest_start = all.iter().map(|o| o.started_unix_ms).max().unwrap();
        let earliest_end = all.iter().map(|o| o.ended_unix_ms).min().unwrap();
        assert!(latest_start < earliest_end, "the clients did not overlap");
    }

    #[test]
    fn an_interrupt_starts_nothing_more() {
        let fake = Fake {
            down: None,
            calls: Mutex::new(vec![]),
        };
        let js = jobs(4, &Topology::FullMesh, &[JobClass::Throughput], 1).unwrap();
        let stop = AtomicBool::new(false);
        let mut n = 0;
        let done = execute(4, js, Overlap::Exclusive, &fake, &stop, &mut |o| {
            n += o.len();
            stop.store(true, Ordering::Relaxed);
        });
        assert!(!done);
        assert!((1..12).contains(&n), "{n}");
    }
}
