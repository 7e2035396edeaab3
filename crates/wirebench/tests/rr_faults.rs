//! The daemon survives clients that vanish or freeze in the middle of a request/response or
//! UDP test, as it does for stream tests (see `faults.rs`, case 18): it notices within its
//! idle timeout, records the test with its partial figures, frees every descriptor and
//! thread, and serves the next client at once.

mod common;

use std::time::{Duration, Instant};

use common::daemon::*;
use common::*;

const FAST: &[&str] = &["--handshake-timeout", "1", "--idle-timeout", "2"];

#[test]
fn client_killed_or_stopped_in_rr_crr_udp_rr_and_udp_tests() {
    let _g = serial();
    let d = LocalDaemon::start(FAST);
    let base = d.baseline();
    let mut n = 1; // the baseline's test
    let modes: [&[&str]; 4] = [&["rr"], &["crr"], &["rr", "--udp"], &["udp", "-b", "100M"]];
    for mode in modes {
        for sig in ["-KILL", "-STOP"] {
            let mut c = std::process::Command::new(BIN);
            c.args(mode)
                .args([
                    "-H",
                    &d.addr.ip().to_string(),
                    "-p",
                    &d.addr.port().to_string(),
                ])
                .args(["-t", "30", "-i", "0.2", "--json"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            let mut child = c.spawn().unwrap();
            std::thread::sleep(Duration::from_millis(1200));
            kill(child.id(), sig);
            let t = Instant::now();
            n += 1;
            let recs = d.wait_records(n, Duration::from_secs(8));
            let noticed = t.elapsed();
            let rec = &recs[n - 1];
            assert!(
                noticed < Duration::from_millis(4500),
                "{mode:?} {sig}: noticed after {noticed:?}"
            );
            assert_eq!(rec["status"], "failed", "{mode:?} {sig}: {rec}");
            // The server's partial figures are in the record: RR counts or UDP datagrams.
            let server = &rec["server"];
            let partial = match mode[0] {
                "udp" => server["udp"]["receivers"][0]["datagrams_received"]
                    .as_u64()
                    .unwrap_or(0),
                _ => server["rr"]["flows"][0]["total"]["transactions"]
                    .as_u64()
                    .unwrap_or(0),
            };
            assert!(partial > 0, "{mode:?} {sig}: no partial figures in {rec}");
            if sig == "-STOP" {
                kill(child.id(), "-KILL");
            }
            let _ = child.wait();
            d.assert_back_to(base, Duration::from_secs(5), 64 * 1024);
            assert_legit_served_quickly(d.addr);
            n += 1;
        }
    }
}
