//! Which tests a plan asks for: hosts are indices `0..n` into the plan's host list, a test
//! is a [`Job`] with its clients, its server and its class.

use std::fmt;

use crate::tournament;

/// How hosts are paired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    /// Every ordered pair (a→b and b→a) once, in round-robin tournament order.
    FullMesh,
    /// Every other host as client of `center`, one at a time (they share the center).
    Star {
        /// The server every test goes to.
        center: usize,
    },
    /// Every other host as client of `center`, all at once: one test (N→1 incast).
    Incast {
        /// The server of the incast.
        center: usize,
    },
    /// Host i to host i+1, the last to the first.
    Ring,
    /// Explicit (client, server) pairs, in this order.
    Pairs(Vec<(usize, usize)>),
}

/// What a test measures, which decides whether it may share a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobClass {
    /// Fills the path (stream, udp): never shares a host with another test.
    Throughput,
    /// Request/response latency (rr, crr): light, may share a host with a throughput test
    /// where the plan allows ([`crate::Overlap`]).
    LatencyOnly,
}

/// One test to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Position in the plan's order (also the scheduler's priority: lower first).
    pub id: usize,
    /// The hosts that run the test's client (one, or several for an incast).
    pub clients: Vec<usize>,
    /// The host whose daemon serves it.
    pub server: usize,
    /// Which of the plan's tests (index into its test list).
    pub test: usize,
    /// Its class.
    pub class: JobClass,
    /// Which repetition (0-based).
    pub repetition: u32,
}

impl Job {
    /// Every host the test occupies: its clients and its server.
    pub fn hosts(&self) -> impl Iterator<Item = usize> + '_ {
        self.clients
            .iter()
            .copied()
            .chain(std::iter::once(self.server))
    }
}

/// A topology that cannot be built for the host count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologyError {
    /// Fewer than two hosts.
    TooFewHosts(usize),
    /// A host index (center or pair end) beyond the host list.
    NoSuchHost {
        /// The index given.
        index: usize,
        /// How many hosts there are.
        hosts: usize,
    },
    /// A pair whose client is its server.
    SelfPair(usize),
    /// No tests to run.
    NoTests,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::TooFewHosts(n) => write!(f, "a mesh needs at least 2 hosts, got {n}"),
            TopologyError::NoSuchHost { index, hosts } => {
                write!(
                    f,
                    "host #{} does not exist: the plan lists {hosts}",
                    index + 1
                )
            }
            TopologyError::SelfPair(h) => {
                write!(f, "host #{} is paired with itself", h + 1)
            }
            TopologyError::NoTests => write!(f, "the plan names no test"),
        }
    }
}

impl std::error::Error for TopologyError {}

/// The tests of `tests` (one class per plan test) over `n` hosts in `topology`, `repetitions`
/// times. Order: repetition, then the topology's rounds, then the plan's tests — so that a
/// scheduler taking jobs in order runs a full mesh in its tournament's rounds.
pub fn jobs(
    n: usize,
    topology: &Topology,
    tests: &[JobClass],
    repetitions: u32,
) -> Result<Vec<Job>, TopologyError> {
    if n < 2 {
        return Err(TopologyError::TooFewHosts(n));
    }
    if tests.is_empty() {
        return Err(TopologyError::NoTests);
    }
    let host = |index: usize| {
        if index < n {
            Ok(index)
        } else {
            Err(TopologyError::NoSuchHost { index, hosts: n })
        }
    };
    // Groups of (clients, server), one round per inner vector.
    let rounds: Vec<Vec<(Vec<usize>, usize)>> = match topology {
        Topology::FullMesh => tournament::ordered_rounds(n)
            .into_iter()
            .map(|r| r.into_iter().map(|(c, s)| (vec![c], s)).collect())
            .collect(),
        Topology::Star { center } => {
            let center = host(*center)?;
            (0..n)
                .filter(|&h| h != center)
                .map(|h| vec![(vec![h], center)])
                .collect()
        }
        Topology::Incast { center } => {
            let center = host(*center)?;
            vec![vec![((0..n).filter(|&h| h != center).collect(), center)]]
        }
        Topology::Ring => (0..n).map(|h| vec![(vec![h], (h + 1) % n)]).collect(),
        Topology::Pairs(pairs) => pairs
            .iter()
            .map(|&(c, s)| {
                let (c, s) = (host(c)?, host(s)?);
                if c == s {
                    return Err(TopologyError::SelfPair(c));
                }
                Ok(vec![(vec![c], s)])
            })
            .collect::<Result<_, _>>()?,
    };
    let mut out = Vec::new();
    for repetition in 0..repetitions {
        for round in &rounds {
            for (test, &class) in tests.iter().enumerate() {
                for (clients, server) in round {
                    out.push(Job {
                        id: out.len(),
                        clients: clients.clone(),
                        server: *server,
                        test,
                        class,
                        repetition,
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: [JobClass; 1] = [JobClass::Throughput];

    #[test]
    fn each_topology_asks_for_its_pairs() {
        let pairs = |t: &Topology, n| -> Vec<(Vec<usize>, usize)> {
            jobs(n, t, &T, 1)
                .unwrap()
                .into_iter()
                .map(|j| (j.clients, j.server))
                .collect()
        };
        assert_eq!(pairs(&Topology::FullMesh, 4).len(), 12);
        assert_eq!(
            pairs(&Topology::Star { center: 1 }, 3),
            vec![(vec![0], 1), (vec![2], 1)]
        );
        assert_eq!(
            pairs(&Topology::Incast { center: 0 }, 4),
            vec![(vec![1, 2, 3], 0)]
        );
        assert_eq!(
            pairs(&Topology::Ring, 3),
            vec![(vec![0], 1), (vec![1], 2), (vec![2], 0)]
        );
        assert_eq!(pairs(&Topology::Pairs(vec![(2, 0)]), 3), vec![(vec![2], 0)]);
    }

    #[test]
    fn repetitions_and_tests_multiply_and_ids_follow_the_order() {
        let two = [JobClass::Throughput, JobClass::LatencyOnly];
        let js = jobs(3, &Topology::Ring, &two, 2).unwrap();
        assert_eq!(js.len(), 3 * 2 * 2);
        assert!(js.iter().enumerate().all(|(i, j)| j.id == i));
        // Within a round, the plan's tests in order; repetitions last.
        assert_eq!(
            (js[0].test, js[1].test, js[1].class),
            (0, 1, JobClass::LatencyOnly)
        );
        assert_eq!((js[5].repetition, js[6].repetition), (0, 1));
    }

    #[test]
    fn impossible_plans_are_refused_with_the_reason() {
        assert_eq!(
            jobs(1, &Topology::FullMesh, &T, 1),
            Err(TopologyError::TooFewHosts(1))
        );
        assert_eq!(
            jobs(3, &Topology::Star { center: 3 }, &T, 1),
            Err(TopologyError::NoSuchHost { index: 3, hosts: 3 })
        );
        assert_eq!(
            jobs(3, &Topology::Pairs(vec![(1, 1)]), &T, 1),
            Err(TopologyError::SelfPair(1))
        );
        assert_eq!(
            jobs(3, &Topology::Ring, &[], 1),
            Err(TopologyError::NoTests)
        );
        assert_eq!(
            TopologyError::NoSuchHost { index: 3, hosts: 3 }.to_string(),
            "host #4 does not exist: the plan lists 3"
        );
    }
}
