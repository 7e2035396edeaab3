//! End-to-end tests of the send and receive paths (`--send-path`, `--recv-path`, `--verify`):
//! the real binary over loopback, every path checked against the other end's count, the
//! kernel's TCP_INFO counters, the content (with `--verify`) and the path's own accounting.

use std::process::{Command, Stdio};

use crate::common::*;
use wirebench_model::error::ErrorKind;
use wirebench_model::result::{RunResult, RunStatus};
use wirebench_model::side::{FlowSide, HostRole, PathUsed, Role, SideReport};
use wirebench_model::spec::{FlowDir, RecvPath, SendPath, WorkloadSpec};
use wirebench_model::validate::SpecField;
use wirebench_model::warning::{FallbackReason, Warning};
use wirebench_report::print::text;

/// Bytes the client writes on each data connection before the payload (preamble + hello).
const DATA_HELLO_WIRE_BYTES: u64 = 24;

fn side(r: &RunResult, host: HostRole) -> &SideReport {
    let run = r.runs.last().expect("a run");
    match host {
        HostRole::Client => run.client.as_ref().expect("client report"),
        HostRole::Server => run.server.as_ref().expect("server report"),
    }
}

/// An end's stream flows.
fn flows(r: &RunResult, host: HostRole) -> &[FlowSide] {
    &side(r, host).stream().expect("stream counts").flows
}

/// `wirebench stream -t 1 -b 200M -C cubic --json ARGS` with `env` set, on loopback. These
/// tests check what each path counts, not how fast it goes: paced, each run costs a tenth of
/// a CPU instead of both CPUs (the send and receive paths' tests took 17.6 s of CPU
/// unpaced, 2026-11-30), and every path still carries 25 MB in calls of every size the
/// pacer hands it (MSG_ZEROCOPY into TCP_ZEROCOPY_RECEIVE still maps pages: 6.5-7.4 MB of
/// 25 MB in three runs).
fn stream(args: &[&str], env: &[(&str, &str)]) -> RunResult {
    let mut c = Command::new(BIN);
    c.args(["stream", "-t", "1", "-b", "200M", "-C", "cubic", "--json"])
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.stdin(Stdio::null()).output().expect("run wirebench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}\n{stdout}");
    RunResult::from_json(&stdout)
        .unwrap_or_else(|e| panic!("not a RunResult ({e}):\n{stdout}\n{stderr}"))
}

/// Every flow as (sender side, receiver side), after checking that both ends agree on the
/// byte count and that it matches the kernel's counters: bytes_received at the receiver and
/// bytes_acked at the sender count the payload, the 24-byte data hello the client sends
/// first, one sequence number for the FIN, and at the client the SYN.
fn reconciled(r: &RunResult) -> Vec<(FlowSide, FlowSide)> {
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    let c = flows(r, HostRole::Client);
    let s = flows(r, HostRole::Server);
    assert_eq!(c.len(), s.len());
    let mut out = Vec::new();
    for (cf, sf) in c.iter().zip(s) {
        let (snd, rcv) = if cf.role == Role::Sender {
            (cf, sf)
        } else {
            (sf, cf)
        };
        assert_eq!((snd.role, rcv.role), (Role::Sender, Role::Receiver));
        assert!(
            snd.error.is_none() && rcv.error.is_none(),
            "{snd:?} {rcv:?}"
        );
        assert!(
            rcv.total_bytes > 1_000_000,
            "flow {} moved too little",
            cf.flow
        );
        assert_eq!(
            snd.total_bytes, rcv.total_bytes,
            "sender and receiver disagree"
        );
        let hello = if cf.dir == FlowDir::ClientToServer {
            DATA_HELLO_WIRE_BYTES
        } else {
            0
        };
        let ti = rcv.socket.tcp_info.as_ref().expect("receiver tcp_info");
        assert_eq!(ti.bytes_received, Some(rcv.total_bytes + hello + 1));
        let ts = snd.socket.tcp_info.as_ref().expect("sender tcp_info");
        let syn = u64::from(cf.dir == FlowDir::ClientToServer);
        assert_eq!(ts.bytes_acked, Some(snd.total_bytes + hello + 1 + syn));
        assert!(rcv.window_bytes > 0 && rcv.window_bytes <= rcv.total_bytes);
        out.push((snd.clone(), rcv.clone()));
    }
    let sum = r.runs[0].summary.as_ref().expect("summary");
    for d in &sum.stream().expect("stream summary").directions {
        assert_eq!(d.unaccounted_bytes, Some(0));
    }
    out
}

/// With `--verify` on a path that delivers data: every byte checked, none differed.
fn assert_verified(rcv: &FlowSide) {
    let v = rcv.verify.expect("verification counts");
    assert_eq!(v.mismatched_bytes, 0, "{rcv:?}");
    assert_eq!(v.verified_bytes, rcv.total_bytes, "{rcv:?}");
}

/// Zero-copy sends (MSG_ZEROCOPY, io_uring SEND_ZC) all completed, as zero-copy or copied.
fn assert_sends_completed(snd: &FlowSide) {
    let z = snd.zerocopy.as_ref().expect("zero-copy send stats");
    assert!(z.sends > 0, "{z:?}");
    assert_eq!(
        z.sends_completed_zerocopy + z.sends_completed_copied,
        z.sends,
        "every zero-copy send completes exactly once, none outstanding: {z:?}"
    );
}

#[test]
fn every_send_path_reconciles_and_verifies() {
    let _g = shared();
    for path in [
        SendPath::Copy,
        SendPath::Sendfile,
        SendPath::Splice,
        SendPath::Zerocopy,
        SendPath::Uring,
        SendPath::UringZc,
    ] {
        // iperf3's -Z stands for --send-path sendfile.
        let flag = format!("--send-path={}", path.as_str());
        let args: Vec<&str> = match path {
            SendPath::Sendfile => vec!["-Z", "--verify"],
            _ => vec![flag.as_str(), "--verify"],
        };
        let r = stream(&args, &[]);
        let spec = r.spec.as_ref().unwrap();
        match &spec.workload {
            WorkloadSpec::Stream(st) => assert_eq!(st.send_path, path),
            other => panic!("not a stream spec: {other:?}"),
        }
        for (snd, rcv) in reconciled(&r) {
            assert_eq!(snd.path, PathUsed::Send(path), "{path:?}");
            assert_eq!(snd.path_fallback, None, "{path:?}");
            assert_eq!(rcv.path, PathUsed::Recv(RecvPath::Copy));
            assert_verified(&rcv);
            match path {
                SendPath::Zerocopy => assert_sends_completed(&snd),
                SendPath::UringZc => assert_sends_completed(&snd),
                _ => assert_eq!(snd.zerocopy, None, "{path:?}"),
            }
            eprintln!(
                "send path {:9} {:>12} bytes {:?}",
                path.as_str(),
                rcv.total_bytes,
                snd.zerocopy
            );
        }
        let d = &r.runs[0]
            .summary
            .as_ref()
            .unwrap()
            .stream()
            .unwrap()
            .directions[0];
        assert_eq!(d.send_paths, vec![path]);
        assert_eq!(d.path_fallback_flows, 0);
    }
}

#[test]
fn every_recv_path_reconciles_and_verifies_where_it_can() {
    let _g = shared();
    for path in [
        RecvPath::Copy,
        RecvPath::Discard,
        RecvPath::Splice,
        RecvPath::Zerocopy,
        RecvPath::Uring,
    ] {
        let flag = format!("--recv-path={}", path.as_str());
        let mut args = vec![flag.as_str()];
        if path.delivers_data() {
            args.push("--verify");
        }
        let r = stream(&args, &[]);
        for (snd, rcv) in reconciled(&r) {
            assert_eq!(snd.path, PathUsed::Send(SendPath::Copy));
            assert_eq!(rcv.path, PathUsed::Recv(path), "{path:?}");
            assert_eq!(rcv.path_fallback, None, "{path:?}");
            if path.delivers_data() {
                assert_verified(&rcv);
            } else {
                assert_eq!(rcv.verify, None);
            }
            if path == RecvPath::Zerocopy {
                let z = rcv.zerocopy.as_ref().expect("TCP_ZEROCOPY_RECEIVE stats");
                assert_eq!(
                    z.bytes_mapped + z.bytes_copied,
                    rcv.total_bytes,
                    "mapped + copied = received: {z:?}"
                );
            } else {
                assert_eq!(rcv.zerocopy, None);
            }
            eprintln!(
                "recv path {:9} {:>12} bytes {:?}",
                path.as_str(),
                rcv.total_bytes,
                rcv.zerocopy
            );
        }
    }
}

/// MSG_ZEROCOPY into TCP_ZEROCOPY_RECEIVE: the receiver maps pages (a plain copy sender's
/// 64 KiB loopback segments cannot be mapped, MSG_ZEROCOPY's page fragments mostly can).
#[test]
fn zerocopy_into_zerocopy_receive_maps_pages() {
    let _g = shared();
    let r = stream(
        &[
            "--send-path",
            "zerocopy",
            "--recv-path",
            "zerocopy",
            "--verify",
        ],
        &[],
    );
    for (snd, rcv) in reconciled(&r) {
        assert_sends_completed(&snd);
        assert_verified(&rcv);
        let z = rcv.zerocopy.as_ref().unwrap();
        assert_eq!(z.bytes_mapped + z.bytes_copied, rcv.total_bytes);
        assert!(z.bytes_mapped > 0, "{z:?}");
        let joined = r.runs[0].summary.as_ref().unwrap().stream().unwrap().flows[0]
            .zerocopy
            .clone()
            .unwrap();
        assert_eq!(joined.sends, snd.zerocopy.as_ref().unwrap().sends);
        assert_eq!(joined.bytes_mapped, z.bytes_mapped);
    }
}

/// The paths apply to whichever end sends or receives: reversed, the server sends with
/// sendfile and the client receives with io_uring.
#[test]
fn reverse_paths_apply_to_the_server_sender() {
    let _g = shared();
    let r = stream(
        &[
            "-R",
            "--send-path",
            "sendfile",
            "--recv-path",
            "uring",
            "--verify",
        ],
        &[],
    );
    let server = flows(&r, HostRole::Server);
    let client = flows(&r, HostRole::Client);
    assert_eq!(server[0].role, Role::Sender);
    assert_eq!(server[0].path, PathUsed::Send(SendPath::Sendfile));
    assert_eq!(client[0].path, PathUsed::Recv(RecvPath::Uring));
    for (_, rcv) in reconciled(&r) {
        assert_verified(&rcv);
    }
}

/// A path that cannot be set up falls back to copy, says why in the flow and in the
/// warnings, and the run still completes with exact counts. The embedded server reads the
/// same environment, so both ends fall back.
#[test]
fn unavailable_paths_fall_back_to_copy_with_a_warning() {
    let _g = shared();
    let r = stream(
        &[
            "--send-path",
            "zerocopy",
            "--recv-path",
            "uring",
            "--verify",
        ],
        &[("WIREBENCH_DISABLE_PATHS", "zerocopy,uring")],
    );
    for (snd, rcv) in reconciled(&r) {
        assert_eq!(snd.path, PathUsed::Send(SendPath::Copy));
        assert_eq!(rcv.path, PathUsed::Recv(RecvPath::Copy));
        // The flow says why it fell back (the path it asked for is in the warnings below).
        for f in [&snd, &rcv] {
            let why = f.path_fallback.as_ref().expect("a fallback reason");
            assert_eq!(why, &FallbackReason::DisabledByEnv, "{f:?}");
            assert!(
                text::fallback(why).contains("WIREBENCH_DISABLE_PATHS"),
                "{}",
                text::fallback(why)
            );
        }
        assert_eq!(snd.zerocopy, None);
        assert_verified(&rcv);
    }
    let sum = r.runs[0].summary.as_ref().unwrap();
    let st = sum.stream().expect("stream summary");
    assert_eq!(st.directions[0].path_fallback_flows, 1);
    assert!(!st.flows[0].path_fallback.is_empty());
    for (host, requested, needle) in [
        (
            HostRole::Client,
            PathUsed::Send(SendPath::Zerocopy),
            "client: flow 0 used the copy path instead of send path zerocopy: disabled by \
             WIREBENCH_DISABLE_PATHS",
        ),
        (
            HostRole::Server,
            PathUsed::Recv(RecvPath::Uring),
            "server: flow 0 used the copy path instead of receive path uring: disabled by \
             WIREBENCH_DISABLE_PATHS",
        ),
    ] {
        assert!(
            sum.warnings.iter().any(|n| n.host == Some(host)
                && n.warning
                    == Warning::PathFallback {
                        flows: vec![0],
                        requested,
                        reason: FallbackReason::DisabledByEnv,
                    }),
            "missing {host:?} {requested:?} fallback in {:?}",
            sum.warnings
        );
        assert!(
            sum.warnings
                .iter()
                .map(text::noted)
                .any(|w| w.contains(needle)),
            "missing {needle:?} in {:?}",
            sum.warnings.iter().map(text::noted).collect::<Vec<_>>()
        );
    }
}

#[test]
fn verify_needs_a_path_that_delivers_data() {
    let _shared = crate::common::shared();
    for path in ["discard", "splice"] {
        let r = wb(&[
            "stream",
            "-t",
            "1",
            "--recv-path",
            path,
            "--verify",
            "--json",
        ]);
        assert_ne!(r.code, 0, "{}", r.stdout);
        let res = r.json();
        let e = res.error.expect("an error");
        assert_eq!(e.kind, ErrorKind::Usage, "{e:?}");
        assert_eq!(e.field, Some(SpecField::Verify), "{e:?}");
        assert!(e.message.contains("does not deliver data"), "{e:?}");
    }
    let r = wb(&["stream", "-t", "1", "-Z", "--send-path", "splice"]);
    assert_ne!(r.code, 0, "-Z and --send-path conflict");
}
