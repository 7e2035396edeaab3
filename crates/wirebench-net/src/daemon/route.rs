//! Routing data connections to their tests by token, and the admission guard that frees a
//! test's slot and token however its session ends.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use wirebench_model::spec::TestSpec;
use wirebench_proto::data::{DataHello, Token};

use super::accept::ConnSlot;
use super::lograte::log_refused;
use super::State;

/// A data connection handed to its test: flow id, socket, and its accounting slot.
pub(super) type DataConn = (u32, TcpStream, ConnSlot);

/// Where the data connections of an admitted test go.
#[derive(Clone)]
pub(super) enum PendingTest {
    /// Setup connections, collected by the test's control session.
    Setup(mpsc::Sender<DataConn>),
    /// CRR while the engine runs: one connection per transaction, straight to the flow's
    /// server thread (a bounded queue; a connection that finds it full is closed), with the
    /// test's spec for the socket options each accepted connection gets.
    Crr(Vec<mpsc::SyncSender<TcpStream>>, std::sync::Arc<TestSpec>),
}

/// Connections a CRR flow may have queued for its server thread.
pub(super) const CRR_QUEUE: usize = 64;

/// Frees the concurrent-test slot and the token when the session ends, however it ends.
pub(super) struct Admission<'a> {
    pub(super) state: &'a State,
    pub(super) token: Token,
    /// The peer the test counts against (identity, or source address).
    pub(super) peer_key: String,
    /// Counted in `State::finishing`.
    pub(super) finishing: bool,
    /// The admission group the test belongs to, with its flows: the group, not the test,
    /// holds the peer's slot, released when its last test ends.
    pub(super) group: Option<(u64, u64)>,
}

/// What joining a running admission group found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GroupJoin {
    /// Joined: the test runs in its group's peer slot.
    Joined,
    /// The group runs but has no room for this test (its tests, or its flows within
    /// `max_flows`): the test is refused at once, as waiting for a slot of its own would run
    /// it after its group ended (a loaded test without its load).
    Full,
    /// No such group runs (the test is the first of it, or its group ended).
    Absent,
}

/// Join the running admission group `group` of `peer_key` with a test of `flows` flows:
/// [`GroupJoin::Joined`] when the group exists, has room for another test, and its flows
/// stay within `max_flows`.
pub(super) fn join_group(state: &State, peer_key: &str, group: u64, flows: u64) -> GroupJoin {
    let Ok(mut m) = state.groups.lock() else {
        return GroupJoin::Absent;
    };
    match m.get_mut(&(peer_key.to_string(), group)) {
        Some((tests, sum))
            if *tests < wirebench_model::spec::ADMISSION_GROUP_TESTS
                && *sum + flows <= u64::from(state.cfg.limits.max_flows) =>
        {
            *tests += 1;
            *sum += flows;
            GroupJoin::Joined
        }
        Some(_) => GroupJoin::Full,
        None => GroupJoin::Absent,
    }
}

/// Open admission group `group` of `peer_key` with its first test, of `flows` flows (the
/// test took a peer slot for the group); false if that group already runs (the test is then
/// on its own).
pub(super) fn open_group(state: &State, peer_key: &str, group: u64, flows: u64) -> bool {
    let Ok(mut m) = state.groups.lock() else {
        return false;
    };
    let key = (peer_key.to_string(), group);
    if m.contains_key(&key) {
        return false;
    }
    m.insert(key, (1, flows));
    true
}

/// A test of `group` ended: true when it was the group's last (its peer slot is free).
fn leave_group(state: &State, peer_key: &str, (group, flows): (u64, u64)) -> bool {
    let Ok(mut m) = state.groups.lock() else {
        return true;
    };
    let key = (peer_key.to_string(), group);
    let Some((tests, sum)) = m.get_mut(&key) else {
        return true;
    };
    *tests = tests.saturating_sub(1);
    *sum = sum.saturating_sub(flows);
    if *tests == 0 {
        m.remove(&key);
        return true;
    }
    false
}

/// How long a new test waits for a slot held by a test whose results are already exchanged.
pub(super) const FINISHING_GRACE: Duration = Duration::from_secs(2);

fn bump(m: &Mutex<HashMap<String, u32>>, key: &str, up: bool) {
    if let Ok(mut m) = m.lock() {
        if up {
            *m.entry(key.to_string()).or_insert(0) += 1;
        } else if let Some(c) = m.get_mut(key) {
            *c = c.saturating_sub(1);
            if *c == 0 {
                m.remove(key);
            }
        }
    }
}

impl Admission<'_> {
    /// The test's results are exchanged: what is left is bookkeeping, so a new test of the
    /// same peer may wait for this slot rather than be told busy.
    pub(super) fn mark_finishing(&mut self) {
        if !self.finishing {
            self.finishing = true;
            bump(&self.state.finishing, &self.peer_key, true);
        }
    }
}

/// Tests of `peer_key` (or of anyone, with `None`) whose results are exchanged.
pub(super) fn finishing(state: &State, peer_key: Option<&str>) -> u32 {
    state.finishing.lock().map_or(0, |m| match peer_key {
        Some(k) => m.get(k).copied().unwrap_or(0),
        None => m.values().sum(),
    })
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if self.finishing {
            bump(&self.state.finishing, &self.peer_key, false);
        }
        if let Ok(mut p) = self.state.pending.lock() {
            p.remove(&self.token);
        }
        self.state.running.fetch_sub(1, Ordering::AcqRel);
        let last = self
            .group
            .is_none_or(|g| leave_group(self.state, &self.peer_key, g));
        if !last {
            return;
        }
        if let Ok(mut m) = self.state.per_peer.lock() {
            if let Some(c) = m.get_mut(&self.peer_key) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    m.remove(&self.peer_key);
                }
            }
        }
    }
}

/// Hand a data connection whose hello is `hello` to the test that issued its token; close it
/// (dropping it) if there is none or its flow's queue is full.
pub(super) fn route_data(
    state: &State,
    peer: SocketAddr,
    hello: DataHello,
    stream: TcpStream,
    slot: ConnSlot,
) {
    let tx = state
        .pending
        .lock()
        .ok()
        .and_then(|p| p.get(&hello.token).cloned());
    match tx {
        Some(PendingTest::Setup(tx)) => {
            let _ = tx.send((hello.flow, stream, slot));
        }
        Some(PendingTest::Crr(flows, spec)) => {
            // The connection's slot is released here: the queue bounds how many a test may
            // hold, and the engine closes each one after its transaction. Each accepted
            // connection gets the test's socket options (congestion control, window), as the
            // setup connections do: the listener's defaults are not the test's.
            if let Err(e) = crate::sockopt::apply(&stream, &spec) {
                log_refused(state, peer, &format!("CRR connection: {e}"));
                return;
            }
            match flows.get(hello.flow as usize) {
                Some(tx) => {
                    if tx.try_send(stream).is_err() {
                        log_refused(state, peer, "CRR connection dropped: flow queue full");
                    }
                }
                None => log_refused(state, peer, "CRR connection for an unknown flow"),
            }
        }
        None => log_refused(
            state,
            peer,
            "data connection with an unknown or stale test token refused",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_model::spec::ADMISSION_GROUP_TESTS;

    fn state(max_flows: u32) -> State {
        let mut cfg = super::super::ServerConfig::new("127.0.0.1:0".parse().unwrap());
        cfg.limits.max_flows = max_flows;
        State::new(cfg, None)
    }

    /// One admitted test of `peer` (counted as running and against the peer, as the
    /// session does), in `group` if given.
    fn admit<'a>(
        state: &'a State,
        peer: &str,
        token: u8,
        group: Option<(u64, u64)>,
    ) -> Admission<'a> {
        state.running.fetch_add(1, Ordering::AcqRel);
        let first = group.is_none_or(|(g, f)| open_group(state, peer, g, f));
        if first {
            *state
                .per_peer
                .lock()
                .unwrap()
                .entry(peer.to_string())
                .or_insert(0) += 1;
        }
        Admission {
            state,
            token: Token([token; 16]),
            peer_key: peer.to_string(),
            finishing: false,
            group,
        }
    }

    fn peer_slots(state: &State, peer: &str) -> u32 {
        state
            .per_peer
            .lock()
            .unwrap()
            .get(peer)
            .copied()
            .unwrap_or(0)
    }

    #[test]
    fn a_group_holds_one_peer_slot_until_its_last_test_ends() {
        let st = state(10);
        let first = admit(&st, "p", 1, Some((7, 4)));
        assert!(!open_group(&st, "p", 7, 1), "the group runs already");
        assert_eq!(
            join_group(&st, "p", 7, 6),
            GroupJoin::Joined,
            "room: 4 + 6 flows of 10"
        );
        let second = Admission {
            state: &st,
            token: Token([2; 16]),
            peer_key: "p".into(),
            finishing: false,
            group: Some((7, 6)),
        };
        st.running.fetch_add(1, Ordering::AcqRel);
        assert_eq!(
            peer_slots(&st, "p"),
            1,
            "a group counts once against its peer"
        );
        drop(first);
        assert_eq!(
            peer_slots(&st, "p"),
            1,
            "the group's second test still runs"
        );
        drop(second);
        assert_eq!(peer_slots(&st, "p"), 0);
        assert!(st.groups.lock().unwrap().is_empty());
        assert_eq!(st.running.load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_group_is_joined_only_within_its_tests_and_flows() {
        let st = state(10);
        let _first = admit(&st, "p", 1, Some((7, 4)));
        assert_eq!(
            join_group(&st, "p", 7, 7),
            GroupJoin::Full,
            "4 + 7 flows exceed 10"
        );
        assert_eq!(
            join_group(&st, "p", 8, 1),
            GroupJoin::Absent,
            "no such group"
        );
        assert_eq!(
            join_group(&st, "q", 7, 1),
            GroupJoin::Absent,
            "another peer's group"
        );
        for _ in 1..ADMISSION_GROUP_TESTS {
            assert_eq!(join_group(&st, "p", 7, 1), GroupJoin::Joined);
        }
        assert_eq!(
            join_group(&st, "p", 7, 1),
            GroupJoin::Full,
            "a group holds at most {ADMISSION_GROUP_TESTS} tests"
        );
    }

    #[test]
    fn a_finishing_test_is_counted_for_its_peer_until_it_ends() {
        let st = state(10);
        let token = Token([3; 16]);
        let (tx, _rx) = mpsc::channel();
        st.pending
            .lock()
            .unwrap()
            .insert(token, PendingTest::Setup(tx));
        let mut a = admit(&st, "p", 3, None);
        let _other = admit(&st, "q", 4, None);
        assert_eq!(finishing(&st, Some("p")), 0);
        a.mark_finishing();
        a.mark_finishing();
        assert_eq!(finishing(&st, Some("p")), 1, "counted once");
        assert_eq!(finishing(&st, Some("q")), 0);
        assert_eq!(finishing(&st, None), 1);
        drop(a);
        assert_eq!(finishing(&st, None), 0);
        assert!(
            !st.pending.lock().unwrap().contains_key(&token),
            "token freed"
        );
        assert_eq!(peer_slots(&st, "p"), 0);
        assert_eq!(peer_slots(&st, "q"), 1);
        assert_eq!(st.running.load(Ordering::Acquire), 1);
    }
}
