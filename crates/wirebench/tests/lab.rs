//! `wirebench lab` from the command line: `lab up` through the emulator says why offloads
//! are off, and `lab exec` passes a SIGTERM on to its child and exits as the child did.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn wb_lab(args: &[&str], dir: &Path) -> Ran {
    let mut c = Command::new(BIN);
    c.args(args).env("WIREBENCH_LAB_DIR", dir);
    finish(c)
}

/// The PIDs whose parent is `parent` and whose command line is `cmdline` (NUL-separated
/// words joined by spaces).
fn children_running(parent: u32, cmdline: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Field 4 (after the parenthesised name) is the parent's PID.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent)
                && String::from_utf8_lossy(&cmd).replace('\0', " ").trim() == cmdline
        })
        .collect()
}

#[test]
fn exec_passes_sigterm_on_and_up_says_why_offloads_are_off() {
    require_netns();
    let _g = shared_timed();
    let dir = std::env::temp_dir().join(format!("wb-lab-exec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("x{}", std::process::id() % 100_000);
    let up = wb_lab(&["lab", "up", &name, "--delay", "1ms"], &dir);
    assert_eq!(up.code, 0, "{}{}", up.stdout, up.stderr);
    assert!(
        up.stdout
            .contains("TSO, GSO and transmit checksum offload are off")
            && up.stdout.contains("because the link emulator"),
        "{}",
        up.stdout
    );
    // The child: a sleep well beyond the test, in the client namespace.
    let exec = Command::new(BIN)
        .args(["lab", "exec", &name, "client", "--", "sleep", "120"])
        .env("WIREBENCH_LAB_DIR", &dir)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // `ip netns exec` execs in place: the sleep is lab exec's own child.
    let sleeper = loop {
        if let Some(&p) = children_running(exec.id(), "sleep 120").first() {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no sleep under lab exec"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    kill(exec.id(), "-TERM");
    let out = exec.wait_with_output().unwrap();
    // 128 + SIGTERM (15): the child died of the signal passed on, and lab exec says so.
    assert_eq!(out.status.code(), Some(143));
    assert!(
        !Path::new(&format!("/proc/{sleeper}")).exists(),
        "the child {sleeper} outlived lab exec"
    );
    let down = wb_lab(&["lab", "down", &name], &dir);
    assert_eq!(down.code, 0, "{}", down.stderr);
    // Without the emulator, no such note.
    let up = wb_lab(&["lab", "up", &name], &dir);
    assert_eq!(up.code, 0, "{}", up.stderr);
    assert!(!up.stdout.contains("offload are off"), "{}", up.stdout);
    let down = wb_lab(&["lab", "down", &name], &dir);
    assert_eq!(down.code, 0, "{}", down.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
