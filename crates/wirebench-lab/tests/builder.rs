//! The one builder behind `Testbed`, `EmulatedPath` and named labs, checked from outside:
//! what `ip -j -d link`, `ip -j addr` and `ip -j neigh` show in the namespaces each of them
//! built with one MTU, and that dropping a test's testbed (also while panicking) removes
//! its namespaces and leaves nothing on disk.
//!
//! Every test skips (prints why and returns) without root, `ip netns` or `ethtool`, unless
//! `WIREBENCH_REQUIRE` makes the missing capability a failure (CI sets it).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use wirebench_lab::emu::{EmuConfig, EmulatedPath, IF_MA, IF_MB};
use wirebench_lab::named::{
    state_dir_from_env, EmulatorCommand, LabManager, LabSpec, CLIENT_IPV4, IF_CLIENT,
    IF_MID_CLIENT, IF_MID_SERVER, IF_SERVER, SERVER_IPV4,
};
use wirebench_lab::{Side, Testbed, ADDR_A, ADDR_B, IF_A, IF_B};

fn lab_available() -> bool {
    use wirebench_sys::require::{capability, command_works};
    capability(
        "netns",
        wirebench_lab::available(),
        "needs root and `ip netns`",
    ) && capability(
        "ethtool",
        command_works("ethtool", "--version"),
        "needs ethtool",
    )
}

/// A manager whose emulator is this crate's `wirebench-lab-emud`, in the default state
/// directory (as the named-lab tests use it).
fn mgr() -> LabManager {
    LabManager::new().with_emulator(EmulatorCommand {
        program: env!("CARGO_BIN_EXE_wirebench-lab-emud").into(),
        args: Vec::new(),
    })
}

fn ip_json(ns: &str, args: &[&str]) -> Vec<Value> {
    let out = Command::new("ip")
        .args(["-n", ns, "-j"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "ip -n {ns} -j {args:?}: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().cloned().unwrap_or_default()
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".into(),
        Some(other) => other.to_string(),
    }
}

/// One line per interface of `ns` and one per address and neighbour entry, as `ip` shows
/// them, with the names and addresses of one layout replaced by the other's (`rename`).
/// Kernel-assigned values (interface indexes, peers' namespace ids, counters) are left out.
fn view(ns: &str, rename: &[(&str, &str)]) -> Vec<String> {
    let map = |s: String| {
        rename
            .iter()
            .find(|(from, _)| *from == s)
            .map_or(s, |(_, to)| to.to_string())
    };
    let mut lines = Vec::new();
    for l in ip_json(ns, &["-d", "link", "show"]) {
        let kind = l
            .get("linkinfo")
            .map_or("-".into(), |i| text(i, "info_kind"));
        lines.push(format!(
            "link {} kind {kind} type {} mtu {} state {} flags {} mac {}",
            map(text(&l, "ifname")),
            text(&l, "link_type"),
            text(&l, "mtu"),
            text(&l, "operstate"),
            text(&l, "flags"),
            text(&l, "address"),
        ));
    }
    for l in ip_json(ns, &["addr", "show"]) {
        for a in l["addr_info"].as_array().into_iter().flatten() {
            lines.push(format!(
                "addr {} {} {}/{} scope {}",
                map(text(&l, "ifname")),
                text(a, "family"),
                map(text(a, "local")),
                text(a, "prefixlen"),
                text(a, "scope"),
            ));
        }
    }
    for n in ip_json(ns, &["neigh", "show"]) {
        lines.push(format!(
            "neigh {} dev {} lladdr {} {}",
            map(text(&n, "dst")),
            map(text(&n, "dev")),
            text(&n, "lladdr"),
            text(&n, "state"),
        ));
    }
    lines
}

/// [`view`] once every link's operational state has settled: the kernel turns a veth's
/// carrier on asynchronously (link watch), a few milliseconds after both ends are up.
fn settled_view(ns: &str, rename: &[(&str, &str)]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let v = view(ns, rename);
        let settled = v
            .iter()
            .filter(|l| l.starts_with("link "))
            .all(|l| l.contains("state UP") || l.contains("state UNKNOWN"));
        if settled || Instant::now() >= deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn ns_exists(name: &str) -> bool {
    std::path::Path::new("/var/run/netns").join(name).exists()
}

/// The test layout's names and addresses, renamed to a named lab's.
const TO_LAB: &[(&str, &str)] = &[
    (IF_A, IF_CLIENT),
    (IF_B, IF_SERVER),
    (IF_MA, IF_MID_CLIENT),
    (IF_MB, IF_MID_SERVER),
    (ADDR_A, CLIENT_IPV4),
    (ADDR_B, SERVER_IPV4),
];

#[test]
fn a_pair_and_a_named_lab_of_one_mtu_have_the_same_interfaces_addresses_and_mtu() {
    if !lab_available() {
        return;
    }
    let tb = Testbed::pair(9000).unwrap();
    let spec = LabSpec {
        mtu: 9000,
        ..LabSpec::new(&format!("b{}p", std::process::id() % 100_000))
    };
    let lab = mgr().up_owned(&spec).unwrap();
    for (side, end) in [
        (Side::A, wirebench_lab::named::Endpoint::Client),
        (Side::B, wirebench_lab::named::Endpoint::Server),
    ] {
        let (ours, theirs) = (
            settled_view(&tb.ns(side), TO_LAB),
            settled_view(&end.ns(lab.name()), &[]),
        );
        let pick = |v: &[String], what: &str| -> Vec<String> {
            v.iter()
                .filter(|l| l.starts_with(what) || l.contains(&format!(" {what} ")))
                .cloned()
                .collect()
        };
        // The interfaces (lo and one veth end, up, with the MTU and the MAC address) and the
        // IPv4 addresses are the same.
        assert_eq!(pick(&ours, "link "), pick(&theirs, "link "));
        assert_eq!(pick(&ours, "inet"), pick(&theirs, "inet"));
        let veth = Testbed::ifname(side);
        let mtu = pick(&ours, &format!("link {}", end.ifname()));
        assert!(
            mtu.len() == 1 && mtu[0].contains("kind veth") && mtu[0].contains("mtu 9000"),
            "{veth}: {mtu:?}"
        );
        // What the test layout keeps apart on purpose: the kernel's IPv6 (a lab disables
        // it) and ARP (a lab has permanent neighbour entries).
        assert!(
            ours.iter().any(|l| l.contains("inet6 ::1/128")),
            "{ours:#?}"
        );
        assert!(pick(&theirs, "inet6").is_empty(), "{theirs:#?}");
        let permanent = |v: &[String]| v.iter().filter(|l| l.contains("PERMANENT")).count();
        assert_eq!(permanent(&ours), 0, "{ours:#?}");
        assert_eq!(permanent(&theirs), 1, "{theirs:#?}");
    }
}

#[test]
fn an_emulated_path_and_an_emulated_lab_of_one_mtu_are_built_alike() {
    if !lab_available() {
        return;
    }
    let path = EmulatedPath::new(4000, EmuConfig::default(), EmuConfig::default()).unwrap();
    let spec = LabSpec {
        mtu: 4000,
        emulate: true,
        ..LabSpec::new(&format!("b{}e", std::process::id() % 100_000))
    };
    let lab = mgr().up_owned(&spec).unwrap();
    let name = lab.name();
    for (ours, theirs) in [
        (path.ns(Side::A), wirebench_lab::named::names::client(name)),
        (path.ns(Side::B), wirebench_lab::named::names::server(name)),
        (
            path.middle_ns().to_string(),
            wirebench_lab::named::names::middle(name),
        ),
    ] {
        // Interfaces, MTU, MACs, addresses (no IPv6 anywhere) and permanent neighbours.
        let (a, b) = (settled_view(&ours, TO_LAB), settled_view(&theirs, &[]));
        assert_eq!(a, b, "{ours} against {theirs}");
        assert!(a.iter().any(|l| l.contains("mtu 4000")), "{a:#?}");
    }
}

#[test]
fn dropping_a_testbed_removes_its_namespaces_and_leaves_no_state() {
    if !lab_available() {
        return;
    }
    let before: Vec<String> = std::fs::read_dir(state_dir_from_env())
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let pair = Testbed::pair(1500).unwrap();
    let single = Testbed::single().unwrap();
    let path = EmulatedPath::new(1500, EmuConfig::default(), EmuConfig::default()).unwrap();
    let names: Vec<String> = [
        pair.namespaces(),
        single.namespaces(),
        path.testbed().namespaces(),
    ]
    .concat();
    assert_eq!(names.len(), 2 + 1 + 3, "{names:?}");
    assert_eq!(pair.namespaces(), [pair.ns(Side::A), pair.ns(Side::B)]);
    assert_eq!(
        path.testbed().namespaces()[2],
        path.middle_ns(),
        "{names:?}"
    );
    assert!(names.iter().all(|n| ns_exists(n)), "{names:?}");
    let after: Vec<String> = std::fs::read_dir(state_dir_from_env())
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let prefixes: Vec<&str> = names
        .iter()
        .filter_map(|n| n.rsplit_once('-'))
        .map(|p| p.0)
        .collect();
    assert!(
        after
            .iter()
            .filter(|f| !before.contains(f))
            .all(|f| !prefixes.iter().any(|p| f.contains(p))),
        "a test testbed wrote state: {after:?}"
    );
    drop((pair, single, path));
    let left: Vec<&String> = names.iter().filter(|n| ns_exists(n)).collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // A panic that unwinds through the owner removes them too.
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let tb = Testbed::pair(1500).unwrap();
        let _ = tx.send(tb.namespaces().to_vec());
        panic!("deliberate panic with a live Testbed");
    });
    assert!(t.join().is_err());
    let names = rx.recv().unwrap();
    assert_eq!(names.len(), 2);
    assert!(names.iter().all(|n| !ns_exists(n)), "{names:?}");
}
