//! Capabilities a test needs, and what happens when one is missing: with the environment
//! variable [`REQUIRE_ENV`] set (CI sets it to `all`), a missing capability fails the test
//! with a message naming it; without it (a developer's machine without root), the test says
//! it skipped and why, on stderr.
//!
//! The variable holds `all` or a comma-separated list of capability names (`netns`,
//! `ethtool`, `nftables`, `io_uring`, `iperf3`, ...); a capability in the list (or any, with
//! `all`) is required.

/// The environment variable that turns a missing capability into a failure.
pub const REQUIRE_ENV: &str = "WIREBENCH_REQUIRE";

/// True if the environment requires `capability`.
pub fn required(capability: &str) -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| listed(&v, capability))
}

/// True if `list` (the variable's value) names `capability` or `all`.
fn listed(list: &str, capability: &str) -> bool {
    list.split(',')
        .map(str::trim)
        .any(|c| c == "all" || c == capability)
}

/// `have` tells whether `capability` is there (`why` says what is missing). Returns true
/// if the test may go on; false if it should return now (it skipped, and said so).
///
/// # Panics
///
/// If the capability is missing and required (see the module docs).
pub fn capability(capability: &str, have: bool, why: &str) -> bool {
    decide(capability, have, why, required(capability))
}

/// [`capability`] with the requirement given.
fn decide(capability: &str, have: bool, why: &str, required: bool) -> bool {
    if have {
        return true;
    }
    assert!(
        !required,
        "{REQUIRE_ENV} requires `{capability}`, which is missing here: {why}"
    );
    eprintln!("skipped: `{capability}` is missing ({why}); set {REQUIRE_ENV}=all to fail instead");
    false
}

/// The environment variable naming a file where checks that needed more than one attempt
/// are listed (CI prints it after the tests).
pub const RETRY_LOG_ENV: &str = "WIREBENCH_RETRY_LOG";

/// Say that `check` passed only at attempt `attempts` (> 1): on stderr, and as a line
/// appended to the file [`RETRY_LOG_ENV`] names, so that a retry never hides an
/// intermittent disagreement.
pub fn note_retry(check: &str, attempts: u32) {
    if attempts <= 1 {
        return;
    }
    let line = format!("{check}: passed at attempt {attempts}\n");
    eprint!("retried: {line}");
    if let Some(path) = std::env::var_os(RETRY_LOG_ENV) {
        use std::io::Write;
        if let Ok(mut f) = crate::safefile::open_append(std::path::Path::new(&path), false) {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// True if the command `program` runs with `arg` (e.g. `ethtool --version`).
pub fn command_works(program: &str, arg: &str) -> bool {
    std::process::Command::new(program)
        .arg(arg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_capability_fails_when_required_and_skips_otherwise() {
        let failed = std::panic::catch_unwind(|| decide("netns", false, "no netns here", true));
        let msg = failed.expect_err("a required, missing capability must panic");
        let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            text.contains("`netns`") && text.contains("no netns here"),
            "{text}"
        );
        assert!(!decide("netns", false, "no netns here", false));
        assert!(decide("netns", true, "unused", true));
        assert!(listed("all", "strace") && listed("netns, strace", "strace"));
        assert!(!listed("netns,ethtool", "strace") && !listed("", "strace"));
    }

    #[test]
    fn present_capabilities_pass() {
        assert!(capability("anything", true, "unused"));
        assert!(command_works("true", "--version") || command_works("sh", "-c"));
        assert!(!command_works("/nonexistent/program", "--version"));
    }
}
