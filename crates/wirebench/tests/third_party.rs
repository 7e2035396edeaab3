//! Third-party tests: `stream -H TARGET --from AGENT` has the agent daemon run the test as
//! the client against the target daemon, with the target's consent (a ticket issued to the
//! coordinator's identity), the agent's permission (`serve --allow-third-party`) and both
//! daemons' limits.

use std::process::Command;
use std::time::Duration;

use crate::common::daemon::LocalDaemon;
use crate::common::*;
use wirebench_model::result::{RunResult, RunStatus};
use wirebench_model::side::SideReport;

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// A key file (mode 0600) removed on drop.
struct Keys(std::path::PathBuf);

impl Keys {
    fn new(lines: &str) -> Keys {
        use std::os::unix::fs::PermissionsExt;
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("wb-tp-keys-{}-{n}", std::process::id()));
        std::fs::write(&p, lines).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        Keys(p)
    }

    fn s(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A daemon with `keys` and `extra` flags.
fn daemon(keys: &Keys, identity: &str, extra: &[&str]) -> LocalDaemon {
    let mut args = vec!["--auth-keys", keys.s(), "--identity", identity];
    args.extend(extra);
    LocalDaemon::start(&args)
}

/// `stream -H target --from agent -t 0.5 --auth alice --json EXTRA`, the coordinator's
/// connections from 127.0.0.2 (`-B`), so that they are told apart from the agent's.
fn third_party(target: &LocalDaemon, agent: &LocalDaemon, extra: &[&str]) -> Ran {
    let mut c = Command::new(BIN);
    c.args(["stream", "-H", "127.0.0.1", "-p"])
        .arg(target.addr.port().to_string())
        .arg("--from")
        .arg(format!("127.0.0.1:{}", agent.addr.port()))
        .args(["-B", "127.0.0.2", "-t", "0.5", "--auth", "alice", "--json"])
        .args(extra)
        .env("WIREBENCH_AUTH_KEY", KEY);
    finish(c)
}

fn total_bytes(r: &SideReport) -> u64 {
    r.stream()
        .map(|s| s.flows.iter().map(|f| f.total_bytes).sum())
        .unwrap_or(0)
}

fn report(v: &serde_json::Value) -> SideReport {
    serde_json::from_value(v.clone()).unwrap()
}

/// Both ends' reports come back; the bytes agree with what each daemon recorded; the test's
/// control connection to the target came from the agent (127.0.0.1), not from the
/// coordinator, whose connections start from 127.0.0.2.
#[test]
fn a_third_party_stream_has_both_reports_and_its_data_moved_between_the_daemons() {
    let _g = shared();
    let keys = Keys::new(&format!("alice {KEY}\n"));
    let target = daemon(&keys, "target", &[]);
    let agent = daemon(&keys, "agent", &["--allow-third-party"]);
    let r = third_party(&target, &agent, &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let doc: RunResult = r.json();
    assert_eq!(doc.status, RunStatus::Completed);
    assert_eq!(
        doc.server_address.as_deref(),
        Some(&*target.addr.to_string())
    );
    let run = &doc.runs[0];
    let (client, server) = (run.client.as_ref().unwrap(), run.server.as_ref().unwrap());
    let sent = total_bytes(client);
    let received = total_bytes(server);
    assert!(
        sent > 0 && sent == received,
        "sent {sent}, received {received}"
    );

    // The target recorded the test as alice's, from the agent's address, with the bytes
    // it read; the agent recorded it as alice's, from the coordinator, against the target.
    let b = target.wait_records(1, Duration::from_secs(5));
    let a = agent.wait_records(1, Duration::from_secs(5));
    assert_eq!(b.len(), 1, "the ticket request is no test: {b:?}");
    assert_eq!(b[0]["identity"], "alice");
    assert_eq!(b[0]["status"], "completed");
    let b_peer: std::net::SocketAddr = b[0]["peer"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        b_peer.ip().to_string(),
        "127.0.0.1",
        "the agent ran the client"
    );
    assert_eq!(total_bytes(&report(&b[0]["server"])), received);
    assert_eq!(a[0]["identity"], "alice");
    assert_eq!(a[0]["third_party_target"], target.addr.to_string());
    let a_peer: std::net::SocketAddr = a[0]["peer"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        a_peer.ip().to_string(),
        "127.0.0.2",
        "the coordinator asked"
    );
    assert_eq!(total_bytes(&report(&a[0]["client"])), sent);
}

/// Without `serve --allow-third-party` the agent refuses, saying so; nothing runs.
#[test]
fn third_party_is_refused_by_default() {
    let _g = shared();
    let keys = Keys::new(&format!("alice {KEY}\n"));
    let target = daemon(&keys, "target", &[]);
    let agent = daemon(&keys, "agent", &[]);
    let r = third_party(&target, &agent, &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "refused", "{v}");
    assert_eq!(v["error"]["daemon"], "agent", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("third-party tests are off on this daemon (serve --allow-third-party)"),
        "{msg}"
    );
    assert!(msg.contains(&agent.addr.to_string()), "{msg}");
    assert!(target.records().is_empty() && agent.records().is_empty());
}

/// The target must itself accept the coordinator's identity: a target whose key file lacks
/// it refuses the ticket, and the agent is never asked.
#[test]
fn third_party_is_refused_when_the_target_does_not_know_the_identity() {
    let _g = shared();
    let keys = Keys::new(&format!("alice {KEY}\n"));
    let others = Keys::new(&format!("bob {KEY}\n"));
    let target = daemon(&others, "target", &[]);
    let agent = daemon(&keys, "agent", &["--allow-third-party"]);
    let r = third_party(&target, &agent, &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "auth_failed", "{v}");
    assert_eq!(v["error"]["daemon"], "target", "{v}");
    assert!(target.records().is_empty() && agent.records().is_empty());
    assert_eq!(agent.log_count("third-party test for"), 0);
}

/// The agent's own limits apply: a test longer than its --max-duration is refused by it.
#[test]
fn the_agents_limits_apply() {
    let _g = shared();
    let keys = Keys::new(&format!("alice {KEY}\n"));
    let target = daemon(&keys, "target", &[]);
    let agent = daemon(
        &keys,
        "agent",
        &["--allow-third-party", "--max-duration", "0.2"],
    );
    let r = third_party(&target, &agent, &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "invalid_spec", "{v}");
    assert_eq!(v["error"]["daemon"], "agent", "{v}");
    assert_eq!(v["error"]["limit"], "max_duration", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("the agent daemon refused the test: -t/--duration"),
        "{msg}"
    );
    assert!(target.records().is_empty() && agent.records().is_empty());
}

/// `--from` needs -H, and is refused with --iperf3.
#[test]
fn from_needs_a_target_and_no_iperf3() {
    let _g = shared();
    let r = wb(&["stream", "--from", "127.0.0.1", "-t", "0.2"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = wb(&[
        "stream",
        "-H",
        "127.0.0.1",
        "--from",
        "127.0.0.1",
        "--iperf3",
        "--json",
    ]);
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("--iperf3"), "{}", r.stdout);
    let r = wb(&[
        "rr",
        "-H",
        "127.0.0.1",
        "--from",
        "127.0.0.1",
        "--under-load",
        "--json",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.contains("--under-load"), "{}", r.stdout);
}

/// The agent relays the live interval samples of both ends as they come.
#[test]
fn live_intervals_are_relayed() {
    let _g = shared();
    let keys = Keys::new(&format!("alice {KEY}\n"));
    let target = daemon(&keys, "target", &[]);
    let agent = daemon(&keys, "agent", &["--allow-third-party"]);
    let mut c = Command::new(BIN);
    c.args(["stream", "-H", "127.0.0.1", "-p"])
        .arg(target.addr.port().to_string())
        .arg("--from")
        .arg(format!("127.0.0.1:{}", agent.addr.port()))
        .args(["-t", "0.5", "-i", "0.1", "--auth", "alice", "--json-stream"])
        .env("WIREBENCH_AUTH_KEY", KEY);
    let r = finish(c);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let events: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["event"] == "interval")
        .collect();
    for host in ["client", "server"] {
        let n = events.iter().filter(|v| v["host"] == host).count();
        assert!(n >= 3, "{n} {host} samples:\n{}", r.stdout);
    }
}

/// The test's engine runs in the agent's process; interrupting the coordinator stops the
/// third-party test at once, and the partial figures of both ends still come back.
#[test]
fn an_interrupted_third_party_test_keeps_both_ends_partial_reports() {
    let _g = shared_timed();
    let keys = Keys::new(&format!("alice {KEY}\n"));
    let target = daemon(&keys, "target", &[]);
    let agent = daemon(&keys, "agent", &["--allow-third-party"]);
    let mut c = Command::new(BIN);
    c.args(["stream", "-H", "127.0.0.1", "-p"])
        .arg(target.addr.port().to_string())
        .arg("--from")
        .arg(format!("127.0.0.1:{}", agent.addr.port()))
        .args(["-t", "30", "--auth", "alice", "--json"])
        .env("WIREBENCH_AUTH_KEY", KEY)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = Guarded::spawn(&mut c);
    assert!(
        wait_engine(agent.pid(), Duration::from_secs(10)),
        "no engine thread in the agent; log:\n{}",
        agent.log_text()
    );
    let t = std::time::Instant::now();
    kill(child.id(), "-INT");
    let out = child.wait_with_output();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(130));
    let doc = RunResult::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(doc.status, RunStatus::Interrupted);
    let run = &doc.runs[0];
    assert!(total_bytes(run.client.as_ref().unwrap()) > 0);
    assert!(total_bytes(run.server.as_ref().unwrap()) > 0);
    for d in [&target, &agent] {
        let r = d.wait_records(1, Duration::from_secs(5));
        assert_eq!(r[0]["status"], "aborted", "{}", r[0]);
    }
}
