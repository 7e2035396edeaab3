//! Named labs checked against the kernel and independent probes: `ip netns list`, `/sys`
//! and `ethtool -k` run through `ip netns exec`, TCP transfers and request/response
//! round trips between the namespaces, the kernel's interface counters against the
//! emulator's, `/proc` for leftover processes.
//!
//! Needs root, iproute2 and ethtool: a missing capability fails the test with its name.
//! Every test removes its labs on drop of a guard (also when it fails) and then checks that
//! no namespace and no emulator process of it is left. The tests run one at a time (a
//! lock), so timing figures and `down_stale` do not interfere.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;

use std::time::{Duration, Instant};

use wirebench_lab::named::{
    names, parse_offloads, parse_sysctl, EmulatorCommand, Endpoint, LabManager, LabSpec,
    NamedError, CLIENT_IPV4, CLIENT_IPV6, SERVER_IPV4, SERVER_IPV6,
};

/// The named-lab tests share one state directory and the labs' fixed names: one at a time,
/// under the test kit's run lock (they also start emulators that load the CPUs).
fn serial() -> wirebench_testkit::Held<wirebench_testkit::RunGuard> {
    wirebench_testkit::serial()
}

/// The manager the tests use: default state directory, the emulator binary of this crate.
fn mgr() -> LabManager {
    assert!(
        wirebench_lab::available(),
        "these tests need root and `ip netns` (iproute2)"
    );
    let ethtool = Command::new("ethtool").arg("--version").output();
    assert!(
        matches!(ethtool, Ok(o) if o.status.success()),
        "these tests need ethtool"
    );
    LabManager::new().with_emulator(EmulatorCommand {
        program: env!("CARGO_BIN_EXE_wirebench-lab-emud").into(),
        args: Vec::new(),
    })
}

/// A lab name unique to this test process.
fn lab_name(tag: &str) -> String {
    format!("t{}{tag}", std::process::id() % 100_000)
}

/// Removes lab `0` on drop (whether the test passed or not) and checks nothing is left.
struct Cleanup(LabManager, String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.0.down(&self.1);
        if !std::thread::panicking() {
            assert_no_leftovers(&self.1);
        }
    }
}

/// `ip netns list`, as the ip command prints it.
fn ip_netns_list() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// PIDs of processes whose command line mentions the emulator binary and `name`.
fn emulator_processes(name: &str) -> Vec<u32> {
    let exe = env!("CARGO_BIN_EXE_wirebench-lab-emud");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect();
            args.first().is_some_and(|a| a == exe) && args.iter().any(|a| a == name)
        })
        .collect()
}

fn assert_no_leftovers(name: &str) {
    let prefix = format!("wbl-{name}-");
    let left: Vec<String> = ip_netns_list()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    let procs = emulator_processes(name);
    assert!(
        procs.is_empty(),
        "emulator processes left behind: {procs:?}"
    );
    let state = mgr().state_dir().join(format!("{name}.json"));
    assert!(
        !state.exists(),
        "state file left behind: {}",
        state.display()
    );
}

/// Output of `argv` run with `ip netns exec` in an endpoint (independent of the library's
/// own read-back, which runs its tools from threads inside the namespace).
fn netns_exec(name: &str, side: Endpoint, argv: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", &side.ns(name)])
        .args(argv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{argv:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `f` on a thread inside namespace `ns`.
fn in_ns<T: Send + 'static>(
    ns: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        wirebench_sys::netns::enter(&ns).unwrap();
        f()
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn mtu_offload_rate_cc_read_back_and_tcp_rate() {
    let _s = wirebench_testkit::link_bound();
    let m = mgr();
    let name = lab_name("a");
    let mut spec = LabSpec::new(&name);
    spec.mtu = 9000;
    spec.offloads = parse_offloads("tx-checksum=off").unwrap();
    spec.rate_bps = Some(100_000_000);
    spec.cc = Some("cubic".into());
    let t0 = Instant::now();
    let lab = m.up_owned(&spec).unwrap();
    let _c = Cleanup(m.clone(), name.clone());
    eprintln!(
        "up (mtu 9000, tx-checksum off, tbf, cubic): {:?}",
        t0.elapsed()
    );
    let r = lab.report();
    for side in [Endpoint::Client, Endpoint::Server] {
        let ep = match side {
            Endpoint::Client => r.client.as_ref().unwrap(),
            Endpoint::Server => r.server.as_ref().unwrap(),
        };
        assert_eq!(ep.mtu, 9000);
        let tx = ep
            .offloads
            .iter()
            .find(|o| o.feature == "tx-checksumming")
            .unwrap();
        assert_eq!((tx.state.as_str(), tx.asked), ("off", Some(false)));
        // The raw read-back is kept; TSO needs checksum offload, so the kernel turned it
        // off too and ethtool says so.
        let tso = ep
            .offloads
            .iter()
            .find(|o| o.feature == "tcp-segmentation-offload")
            .unwrap();
        // (On 6.18 tx-tcp-accecn-segmentation stays on, so the group reads "mixed".)
        assert_ne!(tso.state, "on", "{:?}", tso.lines);
        assert!(
            tso.lines
                .iter()
                .any(|l| l == "tx-tcp-segmentation: off [requested on]"),
            "{:?}",
            tso.lines
        );
        eprintln!(
            "{} ethtool -k read-back: {:?} / {:?}",
            side.as_str(),
            tx.lines,
            tso.lines
        );
        assert!(ep.ethtool_k_raw.contains("tx-checksumming: off"));
        // Independent: /sys and ethtool through `ip netns exec`.
        let mtu = netns_exec(
            &name,
            side,
            &["cat", &format!("/sys/class/net/{}/mtu", side.ifname())],
        );
        assert_eq!(mtu.trim(), "9000");
        let k = netns_exec(&name, side, &["ethtool", "-k", side.ifname()]);
        assert!(k.lines().any(|l| l == "tx-checksumming: off"), "{k}");
        let routes = netns_exec(&name, side, &["ip", "route", "show", "198.18.0.0/24"]);
        assert!(routes.contains("congctl cubic"), "{routes}");
        assert_eq!(
            ep.routes
                .iter()
                .find(|x| x.dst == "198.18.0.0/24")
                .unwrap()
                .congctl
                .as_deref(),
            Some("cubic")
        );
    }
    let client = r.client.as_ref().unwrap();
    let tbf = client.qdiscs.iter().find(|q| q.kind == "tbf").unwrap();
    assert_eq!(tbf.rate_bps, Some(100_000_000));
    assert!(r
        .server
        .as_ref()
        .unwrap()
        .qdiscs
        .iter()
        .all(|q| q.kind != "tbf"));
    let qdisc = netns_exec(
        &name,
        Endpoint::Client,
        &["tc", "qdisc", "show", "dev", "wbc"],
    );
    assert!(
        qdisc.contains("tbf") && qdisc.contains("100Mbit"),
        "{qdisc}"
    );

    // TCP through the token bucket: ~100 Mbit/s of link-layer bytes.
    let server_addr: SocketAddr = format!("{SERVER_IPV4}:5201").parse().unwrap();
    let listener = in_ns(names::server(&name), move || {
        TcpListener::bind(server_addr).unwrap()
    })
    .join()
    .unwrap();
    let receiver = std::thread::spawn(move || {
        let (mut s, peer) = listener.accept().unwrap();
        assert_eq!(peer.ip().to_string(), CLIENT_IPV4);
        let mut buf = vec![0u8; 1 << 16];
        let mut marks = Vec::new();
        let mut total = 0u64;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            total += n as u64;
            marks.push((Instant::now(), total));
        }
        marks
    });
    let sender = in_ns(names::client(&name), move || {
        let mut s = TcpStream::connect_timeout(&server_addr, Duration::from_secs(2)).unwrap();
        let cc = wirebench_sys::tcp::congestion(&s).unwrap();
        let buf = vec![7u8; 1 << 16];
        let end = Instant::now() + Duration::from_secs(3);
        while Instant::now() < end {
            s.write_all(&buf).unwrap();
        }
        cc
    });
    let cc = sender.join().unwrap();
    let marks = receiver.join().unwrap();
    assert_eq!(
        cc, "cubic",
        "the connection's congestion control (TCP_CONGESTION)"
    );
    // Steady state: from 0.5 s after the first byte to the last byte.
    let (t_first, _) = marks[0];
    let start = marks
        .iter()
        .find(|(t, _)| *t >= t_first + Duration::from_millis(500))
        .unwrap();
    let last = marks.last().unwrap();
    let goodput_bps = (last.1 - start.1) as f64 * 8.0 / (last.0 - start.0).as_secs_f64();
    // Each 9014-byte frame tbf counts carries 8948 bytes of payload (timestamps on).
    let link_bps = goodput_bps * 9014.0 / 8948.0;
    eprintln!(
        "TCP through tbf 100 Mbit/s: goodput {:.2} Mbit/s, link-layer {:.2} Mbit/s",
        goodput_bps / 1e6,
        link_bps / 1e6
    );
    assert!((90e6..110e6).contains(&link_bps), "{link_bps}");
    // Ground truth from the kernel: tbf sent at least what arrived.
    let after = lab.show().unwrap();
    let sent = after
        .client
        .unwrap()
        .qdiscs
        .iter()
        .find(|q| q.kind == "tbf")
        .unwrap()
        .sent_bytes;
    assert!(sent >= last.1, "tbf sent {sent} < received {}", last.1);
    lab.down().unwrap();
}

/// Round-trip times of `n` one-byte request/response exchanges over TCP (`TCP_NODELAY`)
/// from the client to an echo server in the server namespace.
fn tcp_rr(name: &str, server: SocketAddr, n: usize) -> Vec<f64> {
    let listener = in_ns(names::server(name), move || {
        TcpListener::bind(server).unwrap()
    })
    .join()
    .unwrap();
    let echo = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut b = [0u8; 1];
        while s.read(&mut b).unwrap() == 1 {
            s.write_all(&b).unwrap();
        }
    });
    let rtts = in_ns(names::client(name), move || {
        let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(5)).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut b = [0u8; 1];
        (0..n)
            .map(|_| {
                let t = Instant::now();
                s.write_all(&b).unwrap();
                s.read_exact(&mut b).unwrap();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect::<Vec<f64>>()
    })
    .join()
    .unwrap();
    echo.join().unwrap();
    rtts
}

#[test]
fn emulated_delay_and_loss() {
    let _s = wirebench_testkit::link_bound();
    let m = mgr();
    let name = lab_name("e");
    let mut spec = LabSpec::new(&name);
    spec.impair.delay_ns = 5_000_000;
    spec.impair.loss_pct = 1.0;
    let t0 = Instant::now();
    let lab = m.up_owned(&spec).unwrap();
    let _c = Cleanup(m.clone(), name.clone());
    eprintln!("up (emulator, 5 ms, 1 %): {:?}", t0.elapsed());
    let r = lab.report();
    assert!(ip_netns_list().contains(&names::middle(&name)));
    let emu = r.emulator.as_ref().unwrap();
    assert!(emu.alive);
    assert_eq!(
        emulator_processes(&name),
        vec![emu.pid],
        "exactly our emulator runs"
    );
    let st = emu.status.as_ref().unwrap();
    assert_eq!(st.impair.delay_ns, 5_000_000);
    assert_eq!(st.impair.loss_pct, 1.0);
    // The endpoints run with the offloads the emulator needs.
    let k = netns_exec(&name, Endpoint::Client, &["ethtool", "-k", "wbc"]);
    assert!(k.lines().any(|l| l == "tx-checksumming: off"), "{k}");
    assert!(
        k.lines()
            .any(|l| l.starts_with("generic-segmentation-offload: off")),
        "{k}"
    );

    let before = lab.show().unwrap();
    let mut rtts = tcp_rr(&name, format!("{SERVER_IPV4}:5202").parse().unwrap(), 200);
    let med = median(&mut rtts);
    let min = rtts[0];
    eprintln!(
        "TCP RR over 5 ms + 5 ms: min {min:.2} ms, median {med:.2} ms, max {:.1} ms",
        rtts[rtts.len() - 1]
    );
    assert!(
        min >= 10.0,
        "a round trip cannot beat twice the delay: {min}"
    );
    assert!(med < 13.0, "median RTT {med} ms");

    // The emulator's counters against the kernel's interface counters.
    std::thread::sleep(Duration::from_millis(50));
    let after = lab.show().unwrap();
    let st = after.emulator.clone().unwrap().status.unwrap();
    let (c0, c1) = (before.client.unwrap(), after.client.unwrap());
    let (s0, s1) = (before.server.unwrap(), after.server.unwrap());
    let (c2s, s2c) = (st.client_to_server, st.server_to_client);
    let b0 = before.emulator.unwrap().status.unwrap();
    assert_eq!(
        c2s.received - b0.client_to_server.received,
        c1.tx_packets - c0.tx_packets,
        "frames the client sent = frames the emulator read from it"
    );
    assert_eq!(
        s2c.received - b0.server_to_client.received,
        s1.tx_packets - s0.tx_packets
    );
    assert_eq!(
        c2s.forwarded, s1.rx_packets,
        "what the emulator forwarded, the server got"
    );
    assert_eq!(s2c.forwarded, c1.rx_packets);
    let (rx, dropped) = (c2s.received + s2c.received, c2s.dropped + s2c.dropped);
    eprintln!(
        "emulator: {rx} frames, {dropped} dropped ({:.2} %)",
        100.0 * dropped as f64 / rx as f64
    );
    assert!(
        dropped >= 1 && (dropped as f64) < 0.05 * rx as f64,
        "{dropped} of {rx}"
    );
    assert_eq!(c2s.forwarded + c2s.dropped, c2s.received + c2s.duplicated);
    lab.down().unwrap();
}

#[test]
fn refused_settings_are_named_and_leave_nothing() {
    let _s = serial();
    let m = mgr();
    let name = lab_name("r");
    let _c = Cleanup(m.clone(), name.clone());
    let cases: Vec<(LabSpec, &str, &str)> = vec![
        (
            {
                let mut s = LabSpec::new(&name);
                s.mtu = 70000;
                s
            },
            "mtu",
            "70000",
        ),
        (
            {
                let mut s = LabSpec::new(&name);
                s.offloads = parse_offloads("tso=off,no-such-offload=off").unwrap();
                s
            },
            "offload",
            "no-such-offload=off",
        ),
        (
            {
                let mut s = LabSpec::new(&name);
                s.offloads = parse_offloads("lro=on").unwrap();
                s
            },
            "offload",
            "lro=on",
        ),
        (
            {
                let mut s = LabSpec::new(&name);
                s.cc = Some("vegas".into());
                s
            },
            "cc",
            "vegas",
        ),
        (
            {
                let mut s = LabSpec::new(&name);
                s.sysctls = vec![parse_sysctl("net.ipv4.no_such_key=1").unwrap()];
                s
            },
            "sysctl",
            "net.ipv4.no_such_key=1",
        ),
        (
            {
                let mut s = LabSpec::new(&name);
                s.mtu = 70000;
                s.impair.delay_ns = 1_000_000;
                s
            },
            "mtu",
            "70000",
        ),
    ];
    for (spec, setting, value) in cases {
        let t0 = Instant::now();
        let e = m.up(&spec).unwrap_err();
        let msg = e.to_string();
        eprintln!("refused in {:?}: {msg}", t0.elapsed());
        match &e {
            NamedError::Refused {
                setting: s,
                value: v,
                ..
            }
            | NamedError::InvalidSetting {
                setting: s,
                value: v,
                ..
            } => {
                assert_eq!((s.as_str(), v.as_str()), (setting, value), "{msg}");
            }
            other => panic!("expected a refusal of --{setting} {value}, got {other:?}"),
        }
        assert!(
            msg.contains(&format!("--{setting}")) && msg.contains(value),
            "{msg}"
        );
        assert_no_leftovers(&name);
    }
    // A name in use is refused; the lab that holds it is untouched.
    let _lab = m.up_owned(&LabSpec::new(&name)).unwrap();
    assert!(matches!(
        m.up(&LabSpec::new(&name)),
        Err(NamedError::Exists { .. })
    ));
    assert!(m.show(&name).unwrap().stale.is_empty());
    assert!(matches!(
        m.down("t-no-such"),
        Err(NamedError::NotFound { .. })
    ));
    assert!(matches!(
        m.up(&LabSpec::new("Bad_Name")),
        Err(NamedError::InvalidName { .. })
    ));
}

#[test]
fn down_stale_removes_a_lab_whose_emulator_was_killed() {
    let _s = serial();
    let m = mgr();
    let name = lab_name("k");
    let mut spec = LabSpec::new(&name);
    spec.impair.delay_ns = 1_000_000;
    m.up(&spec).unwrap();
    let _c = Cleanup(m.clone(), name.clone());
    assert!(
        m.stale().iter().all(|s| s.name != name),
        "fresh lab is not stale"
    );
    let pid = m.state(&name).unwrap().unwrap().emulator.unwrap().proc.pid;
    assert_eq!(emulator_processes(&name), vec![pid]);
    let kill = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    let stale = loop {
        if let Some(s) = m.stale().into_iter().find(|s| s.name == name) {
            break s;
        }
        assert!(Instant::now() < deadline, "lab never became stale");
        std::thread::sleep(Duration::from_millis(10));
    };
    eprintln!("stale: {stale:?}");
    assert!(stale
        .reasons
        .iter()
        .any(|r| r.contains(&format!("emulator pid {pid} is gone"))));
    let report = m.show(&name).unwrap();
    assert!(!report.stale.is_empty() && !report.emulator.unwrap().alive);
    let removed = m.down_stale().unwrap();
    let ours = removed
        .iter()
        .find(|d| d.name == name)
        .expect("down_stale removed our lab");
    assert_eq!(ours.namespaces.len(), 3, "{ours:?}");
    assert_eq!(
        ours.emulator_pid, None,
        "a dead emulator is not signalled again"
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "emulator reaped"
    );
    assert_no_leftovers(&name);
}

#[test]
fn build_and_teardown_times() {
    let _s = serial();
    let m = mgr();
    let name = lab_name("p");
    let _c = Cleanup(m.clone(), name.clone());
    let times = |spec: &LabSpec, n: usize| {
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let t0 = Instant::now();
            m.up(spec).unwrap();
            up.push(t0.elapsed().as_secs_f64() * 1e3);
            let t1 = Instant::now();
            m.down(&name).unwrap();
            down.push(t1.elapsed().as_secs_f64() * 1e3);
            assert!(!ip_netns_list()
                .iter()
                .any(|n| n.starts_with(&format!("wbl-{name}-"))));
        }
        let (um, dm) = (median(&mut up), median(&mut down));
        (um, up[0], up[n - 1], dm, down[0], down[n - 1])
    };
    let plain = times(&LabSpec::new(&name), 21);
    eprintln!(
        "plain veth pair: up median {:.1} ms (min {:.1}, max {:.1}); down median {:.1} ms (min {:.1}, max {:.1})",
        plain.0, plain.1, plain.2, plain.3, plain.4, plain.5
    );
    let mut full = LabSpec::new(&name);
    full.mtu = 9000;
    full.offloads = parse_offloads("gro=on").unwrap();
    full.rate_bps = Some(1_000_000_000);
    full.cc = Some("cubic".into());
    full.impair.delay_ns = 1_000_000;
    let emu = times(&full, 7);
    eprintln!(
        "emulated (mtu, offload, tbf, cc, delay): up median {:.1} ms (min {:.1}, max {:.1}); down median {:.1} ms (min {:.1}, max {:.1})",
        emu.0, emu.1, emu.2, emu.3, emu.4, emu.5
    );
    assert!(plain.0 < 300.0 && plain.3 < 300.0, "{plain:?}");
}

#[test]
fn ipv6_sysctls_exec_and_json() {
    let _s = serial();
    let m = mgr();
    let name = lab_name("v");
    let mut spec = LabSpec::new(&name);
    spec.ipv6 = true;
    spec.cc = Some("reno".into());
    spec.sysctls = vec![
        parse_sysctl("server:net.ipv4.tcp_rmem=4096 65536 1048576").unwrap(),
        parse_sysctl("net.ipv4.tcp_slow_start_after_idle=0").unwrap(),
    ];
    let lab = m.up_owned(&spec).unwrap();
    let _c = Cleanup(m.clone(), name.clone());
    let r = lab.report();
    let srv = r.server.as_ref().unwrap();
    assert!(
        srv.addresses.contains(&format!("{SERVER_IPV6}/64")),
        "{:?}",
        srv.addresses
    );
    // Independent read-back of the sysctls through `ip netns exec`.
    let rmem = netns_exec(
        &name,
        Endpoint::Server,
        &["cat", "/proc/sys/net/ipv4/tcp_rmem"],
    );
    assert_eq!(
        rmem.split_whitespace().collect::<Vec<_>>(),
        ["4096", "65536", "1048576"]
    );
    let crmem = netns_exec(
        &name,
        Endpoint::Client,
        &["cat", "/proc/sys/net/ipv4/tcp_rmem"],
    );
    assert_ne!(
        crmem.split_whitespace().nth(1),
        Some("65536"),
        "client untouched"
    );
    let host = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").unwrap();
    assert_ne!(
        host.split_whitespace().nth(1),
        Some("65536"),
        "host untouched"
    );
    for ep in [r.client.as_ref().unwrap(), srv] {
        assert_eq!(
            ep.routes
                .iter()
                .find(|x| x.dst == "fd77:6c62:6c00::/64")
                .unwrap()
                .congctl
                .as_deref(),
            Some("reno")
        );
        assert_eq!(
            ep.cc_default, "reno",
            "reno is allowed in a child namespace"
        );
    }
    // TCP over IPv6, with the routes' congestion control.
    let server: SocketAddr = format!("[{SERVER_IPV6}]:5203").parse().unwrap();
    let listener = in_ns(names::server(&name), move || {
        TcpListener::bind(server).unwrap()
    })
    .join()
    .unwrap();
    let acc = std::thread::spawn(move || listener.accept().map(|(_, p)| p.ip().to_string()));
    let cc = in_ns(names::client(&name), move || {
        let s = TcpStream::connect_timeout(&server, Duration::from_secs(3)).unwrap();
        wirebench_sys::tcp::congestion(&s).unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(cc, "reno");
    assert_eq!(acc.join().unwrap().unwrap(), CLIENT_IPV6);
    // exec runs in the namespace.
    let out = m
        .command(&name, Endpoint::Client, "ip")
        .unwrap()
        .args(["-o", "addr", "show", "dev", "wbc"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(CLIENT_IPV4) && text.contains(CLIENT_IPV6),
        "{text}"
    );
    let status = m
        .exec(
            &name,
            Endpoint::Server,
            &["sh".into(), "-c".into(), "exit 7".into()],
        )
        .unwrap();
    assert_eq!(status.code(), Some(7));
    // The report serializes to JSON and back.
    let json = serde_json::to_string(&m.show(&name).unwrap()).unwrap();
    let back: wirebench_lab::named::LabReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.spec.unwrap(), spec);
    // IPv6 is disabled in a lab without it.
    let plain = lab_name("w");
    let _p = m.up_owned(&LabSpec::new(&plain)).unwrap();
    let v6 = netns_exec(
        &plain,
        Endpoint::Client,
        &["cat", "/proc/sys/net/ipv6/conf/wbc/disable_ipv6"],
    );
    assert_eq!(v6.trim(), "1");
}
