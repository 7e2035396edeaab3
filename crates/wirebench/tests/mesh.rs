//! `wirebench mesh`, end to end: 8 network namespaces on one bridge, each with its own
//! authenticated daemon that accepts third-party tests; a full mesh of short streams run
//! from one of them (every ordered pair once, no host in two tests at once by the tests' own
//! times, one stopped daemon recorded as down while the rest completes, the JSON valid
//! against docs/mesh.schema.json, the results directory written) and an incast plan (N→1
//! at once). Everything the test builds is removed on drop, also when it fails.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::common::*;
use wirebench_model::mesh::{MeshResult, MeshStatus};
use wirebench_model::result::RunStatus;

const KEY: &str = "mesh 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";

/// Namespaces `{prefix}h0..` joined by a bridge in `{prefix}hub`, a daemon in each, a
/// scratch directory; all removed (daemons killed by PID) on drop.
struct Fleet {
    prefix: String,
    n: usize,
    daemons: Vec<Option<Daemon>>,
    dir: PathBuf,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Fleet {
    fn addr(i: usize) -> String {
        format!("10.77.0.{}", i + 1)
    }

    fn ns(&self, i: usize) -> String {
        format!("{}h{i}", self.prefix)
    }

    fn new(n: usize) -> Fleet {
        let prefix = wirebench_lab::Testbed::unique_prefix();
        let dir = std::env::temp_dir().join(format!("wb-mesh-{prefix}"));
        let mut f = Fleet {
            prefix,
            n,
            daemons: Vec::new(),
            dir,
        };
        std::fs::create_dir_all(&f.dir).unwrap();
        let keys = f.dir.join("keys");
        std::fs::write(&keys, KEY).unwrap();
        std::fs::set_permissions(&keys, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let hub = format!("{}hub", f.prefix);
        ip(&["netns", "add", &hub]);
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &hub, "link", "set", "br0", "up"]);
        for i in 0..n {
            let ns = f.ns(i);
            ip(&["netns", "add", &ns]);
            let port = format!("p{i}");
            ip(&[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ]);
            ip(&["-n", &hub, "link", "set", &port, "master", "br0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", Fleet::addr(i)),
                "dev",
                "eth0",
            ]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        }
        for i in 0..n {
            let d = f.start_daemon(i, &keys);
            f.daemons.push(Some(d));
        }
        f
    }

    fn start_daemon(&self, i: usize, keys: &Path) -> Daemon {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(i), bin()]);
        c.args([
            "serve",
            "--bind",
            &Fleet::addr(i),
            "--allow-third-party",
            "--auth-keys",
        ]);
        c.arg(keys);
        spawn_daemon(c)
    }

    fn stop_daemon(&mut self, i: usize) {
        // Killed (by its PID) as it drops.
        drop(self.daemons[i].take());
    }

    fn hosts(&self, count: usize) -> String {
        (0..count).map(Fleet::addr).collect::<Vec<_>>().join(",")
    }

    /// `wirebench mesh ARGS` run inside host 0's namespace, with the fleet's key.
    fn mesh(&self, args: &[&str]) -> Ran {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(0), bin(), "mesh"]);
        c.args(["--auth", "mesh", "--auth-key-file"]);
        c.arg(self.dir.join("keys"));
        c.arg("--db").arg(self.dir.join("history.db"));
        c.args(args);
        finish(c)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for i in 0..self.daemons.len() {
            self.stop_daemon(i);
        }
        for i in 0..self.n {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(i)])
                .status();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &format!("{}hub", self.prefix)])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn have_netns() -> bool {
    wirebench_sys::require::capability(
        "netns",
        wirebench_lab::available(),
        "mesh tests build network namespaces (root and iproute2)",
    )
}

fn validate(doc: &serde_json::Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/mesh.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut bad = doc.clone();
    bad["tests"][0]["started_unix_ms"] = serde_json::json!("soon");
    assert!(!validator.is_valid(&bad), "a text time passed the schema");
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

#[test]
fn a_full_mesh_measures_every_pair_once_with_exclusive_hosts_and_a_down_host_recorded() {
    let _g = shared_timed();
    if !have_netns() {
        return;
    }
    let mut f = Fleet::new(8);
    f.stop_daemon(7);
    let out = f.dir.join("out");
    let out_s = out.display().to_string();
    let hosts = f.hosts(8);
    let started = Instant::now();
    let r = f.mesh(&[
        "--hosts", &hosts, "--json", "-o", &out_s, "--", "stream", "-t", "0.3",
    ]);
    let took = started.elapsed();
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    validate(&doc);
    let m: MeshResult = serde_json::from_value(doc).unwrap();
    assert_eq!((m.kind.as_str(), m.status), ("mesh", MeshStatus::Completed));
    assert_eq!(m.hosts.len(), 8);
    let down = &m.hosts[7];
    // Every ordered pair once.
    let pairs: BTreeSet<(&str, &str)> = m
        .tests
        .iter()
        .map(|t| (t.client.as_str(), t.server.as_str()))
        .collect();
    assert_eq!((m.tests.len(), pairs.len()), (56, 56));
    // The down host's 14 tests failed with the reason; the other 42 completed.
    for t in &m.tests {
        let touches = &t.client == down || &t.server == down;
        if touches {
            assert_ne!(
                t.result.status,
                RunStatus::Completed,
                "{} → {}",
                t.client,
                t.server
            );
            let e = t
                .result
                .error
                .as_ref()
                .expect("a down host's test says why");
            assert!(!e.message.is_empty());
        } else {
            assert_eq!(
                t.result.status,
                RunStatus::Completed,
                "{} → {}: {:?}",
                t.client,
                t.server,
                t.result.error
            );
            let run = &t.result.runs[0];
            assert!(
                run.summary.is_some(),
                "{} → {} has its figures",
                t.client,
                t.server
            );
        }
    }
    // No host in two tests at once, from the tests' own times; and disjoint pairs did run
    // at once.
    let mut parallel = 0;
    for (i, a) in m.tests.iter().enumerate() {
        for b in &m.tests[i + 1..] {
            let share = [&a.client, &a.server]
                .iter()
                .any(|h| **h == b.client || **h == b.server);
            let both = overlap(
                (a.started_unix_ms, a.ended_unix_ms),
                (b.started_unix_ms, b.ended_unix_ms),
            );
            assert!(
                !(share && both),
                "{} → {} and {} → {} overlap",
                a.client,
                a.server,
                b.client,
                b.server
            );
            parallel += usize::from(both);
        }
    }
    assert!(parallel >= 14, "only {parallel} pairs of tests ran at once");
    eprintln!("56 tests in {took:?}");
    // The results directory: the document, one file per test, the page with its heatmap.
    let on_disk: MeshResult =
        serde_json::from_str(&std::fs::read_to_string(out.join("mesh.json")).unwrap()).unwrap();
    assert_eq!(on_disk.tests.len(), 56);
    assert!(out.join("tests/0056.json").exists());
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("class=\"cell\"") && page.contains("Receiver throughput per pair"));
}

#[test]
fn an_incast_plan_runs_its_clients_at_once() {
    let _g = shared();
    if !have_netns() {
        return;
    }
    let f = Fleet::new(5);
    let plan = f.dir.join("incast.toml");
    let hosts: Vec<String> = (0..5).map(|i| format!("\"{}\"", Fleet::addr(i))).collect();
    std::fs::write(
        &plan,
        format!(
            "hosts = [{}]\ntopology = \"incast\"\ncenter = \"{}\"\n[[test]]\nline = \"stream -t 0.5\"\n",
            hosts.join(", "),
            Fleet::addr(0)
        ),
    )
    .unwrap();
    let r = f.mesh(&["--plan", &plan.display().to_string(), "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let m: MeshResult = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(m.topology, "incast");
    assert_eq!(m.tests.len(), 4);
    assert!(m.tests.iter().all(|t| t.server == m.hosts[0]));
    assert!(m
        .tests
        .iter()
        .all(|t| t.result.status == RunStatus::Completed));
    let latest_start = m.tests.iter().map(|t| t.started_unix_ms).max().unwrap();
    let earliest_end = m.tests.iter().map(|t| t.ended_unix_ms).min().unwrap();
    assert!(
        latest_start < earliest_end,
        "the 4 clients did not run at once"
    );
}

/// A ring plan run twice by `--every 1 --count 2`: each round runs the ring's tests (every
/// host to the next), round 2 starts at least 1 s after round 1 did (`--every` counts from
/// a round's start), and every test is saved to the history database as one row tagged
/// with the mesh's client and server (read back with `history list --json`).
#[test]
fn a_ring_repeated_by_every_and_count_is_saved_test_by_test() {
    let _g = shared();
    if !have_netns() {
        return;
    }
    let f = Fleet::new(3);
    let plan = f.dir.join("ring.toml");
    let hosts: Vec<String> = (0..3).map(|i| format!("\"{}\"", Fleet::addr(i))).collect();
    std::fs::write(
        &plan,
        format!(
            "hosts = [{}]\ntopology = \"ring\"\n[[test]]\nline = \"stream -t 0.3\"\n",
            hosts.join(", ")
        ),
    )
    .unwrap();
    let r = f.mesh(&[
        "--plan",
        &plan.display().to_string(),
        "--every",
        "1",
        "--count",
        "2",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let m: MeshResult = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        (m.topology.as_str(), m.status),
        ("ring", MeshStatus::Completed)
    );
    let round = |n: u32| -> Vec<&wirebench_model::mesh::MeshTest> {
        m.tests.iter().filter(|t| t.round == n).collect()
    };
    // Rounds are counted from 0.
    let (first, second) = (round(0), round(1));
    assert!(
        !first.is_empty(),
        "no test in the first round: {:?}",
        m.tests.len()
    );
    assert_eq!(first.len(), second.len(), "rounds of different sizes");
    assert_eq!(
        first.len() * 2,
        m.tests.len(),
        "tests outside the two rounds"
    );
    // The ring: each host is a client once per round, towards another host.
    let clients: BTreeSet<&str> = first.iter().map(|t| t.client.as_str()).collect();
    assert_eq!(clients.len(), 3, "{first:?}");
    assert!(first.iter().all(|t| t.client != t.server));
    assert!(m
        .tests
        .iter()
        .all(|t| t.result.status == RunStatus::Completed));
    let start =
        |v: &[&wirebench_model::mesh::MeshTest]| v.iter().map(|t| t.started_unix_ms).min().unwrap();
    let (s1, s2) = (start(&first), start(&second));
    assert!(
        s2 >= s1 + 1000,
        "round 2 started {} ms after round 1",
        s2 - s1
    );
    // The history: one row per test.
    let out = finish({
        let mut c = Command::new(bin());
        c.args(["history", "list", "--limit", "0", "--json", "--db"]);
        c.arg(f.dir.join("history.db"));
        c
    });
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows.len(), m.tests.len(), "{}", out.stdout);
}
