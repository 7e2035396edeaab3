//! The daemon survives clients that vanish or freeze in the middle of a request/response or
//! UDP test, as it does for stream tests (see `faults.rs`, case 18): it notices within its
//! idle timeout, records the test with its partial figures, frees every descriptor and
//! thread, and serves the next client at once.

use std::time::Duration;

use crate::common::daemon::*;
use crate::common::*;
use wirebench_model::side::SideReport;

const FAST: &[&str] = &["--handshake-timeout", "1", "--idle-timeout", "2"];

#[test]
fn client_killed_or_stopped_in_rr_crr_udp_rr_and_udp_tests() {
    let _g = shared_timed();
    let d = LocalDaemon::start(FAST);
    let base = d.baseline();
    let mut n = 1; // the baseline's test
    let modes: [&[&str]; 4] = [&["rr"], &["crr"], &["rr", "--udp"], &["udp", "-b", "100M"]];
    for mode in modes {
        for sig in ["-KILL", "-STOP"] {
            n += 1;
            let rec = client_signalled_mid_test(&d, mode, sig, n);
            // The server's partial figures are in the record: RR counts or UDP datagrams.
            let server: SideReport = serde_json::from_value(rec["server"].clone())
                .unwrap_or_else(|e| panic!("{mode:?} {sig}: server report ({e}) in {rec}"));
            let partial = match mode[0] {
                "udp" => server
                    .udp()
                    .and_then(|u| u.receivers.first())
                    .map_or(0, |r| r.datagrams_received),
                _ => server
                    .rr()
                    .and_then(|r| r.flows.first())
                    .map_or(0, |f| f.total.transactions),
            };
            assert!(partial > 0, "{mode:?} {sig}: no partial figures in {rec}");
            d.assert_back_to(base, Duration::from_secs(5), 64 * 1024);
            assert_legit_served_quickly(d.addr);
            n += 1;
        }
    }
}
