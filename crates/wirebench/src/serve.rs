//! `wirebench serve`: the daemon's command line — limits, keys, records, signals.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use wirebench_model::spec::Limits;
use wirebench_net::daemon::{Daemon, ServerConfig};
use wirebench_proto::auth::{valid_identity, KeyTable};

use crate::cli::ServeArgs;

/// Read and parse a key file (see [`crate::keyfile::read_key_file`]); every error names
/// the file.
pub fn load_key_table(path: &Path, insecure: bool) -> Result<KeyTable> {
    let text = crate::keyfile::read_key_file(path, insecure).map_err(|e| anyhow!(e))?;
    KeyTable::parse(&text).map_err(|e| anyhow!("malformed key file {}: {e}", path.display()))
}

/// `v` seconds as a duration; an error naming `flag` unless 0 < v <= 86400.
pub fn secs_to_duration(v: f64, flag: &str) -> Result<std::time::Duration> {
    if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
        return Err(anyhow!(
            "{flag} {v}: must be more than 0 and at most 86400 seconds"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

/// `wirebench serve`: run the daemon until SIGINT, SIGTERM or SIGHUP.
pub fn serve(a: &ServeArgs) -> Result<()> {
    let keys_given = a.auth_keys.as_ref();
    let keys = match &a.auth_keys {
        Some(p) => Some(Arc::new(load_key_table(p, a.insecure_key_file)?)),
        None => None,
    };
    if keys.is_none() && !a.bind.is_loopback() && !a.allow_unauthenticated {
        return Err(anyhow!(
            "refusing to listen on {} without authentication: pass --auth-keys FILE, or \
             --allow-unauthenticated to serve anyone who can reach this address",
            a.bind
        ));
    }
    if a.iperf3 && !a.bind.is_loopback() && !a.allow_unauthenticated {
        return Err(anyhow!(
            "refusing to serve iperf3 clients on {}: they cannot authenticate; pass \
             --allow-unauthenticated to serve anyone who can reach this address",
            a.bind
        ));
    }
    for (flag, v) in [
        ("--max-tests", a.max_tests as usize),
        ("--max-flows", a.max_flows as usize),
        ("--max-connections", a.max_connections),
        ("--max-handshakes", a.max_handshakes),
        (
            "--max-conns-per-source",
            a.max_conns_per_source.unwrap_or(1),
        ),
        (
            "--max-tests-per-peer",
            a.max_tests_per_peer.map_or(1, |v| v as usize),
        ),
    ] {
        if v == 0 {
            return Err(anyhow!(
                "{flag} 0 would refuse every test; it must be at least 1"
            ));
        }
    }
    let mut cfg = ServerConfig::new(SocketAddr::new(a.bind, a.port));
    cfg.limits = Limits {
        max_concurrent_tests: a.max_tests,
        max_flows: a.max_flows,
        max_duration_ms: crate::secs_to_ms(a.max_duration)
            .ok_or_else(|| anyhow!("--max-duration must be positive"))?,
        max_rate_bps: a.max_rate,
        ..Limits::default()
    };
    cfg.max_conns_per_source = a
        .max_conns_per_source
        .unwrap_or_else(|| wirebench_net::daemon::default_conns_per_source(&cfg.limits));
    cfg.max_connections = a.max_connections;
    cfg.max_pending_handshakes = a.max_handshakes;
    // One peer (identity, or source address without authentication) may not take every test
    // slot: by default it runs one test at a time when the daemon runs several.
    cfg.max_tests_per_peer =
        a.max_tests_per_peer
            .unwrap_or(if a.max_tests > 1 { 1 } else { a.max_tests });
    cfg.timeouts.handshake = secs_to_duration(a.handshake_timeout, "--handshake-timeout")?;
    cfg.timeouts.peer_silence = secs_to_duration(a.idle_timeout, "--idle-timeout")?;
    cfg.timeouts.results = secs_to_duration(a.results_timeout, "--results-timeout")?;
    // Each handshaking connection holds two descriptors (its socket and the eviction handle).
    let want_fds = (cfg.max_connections as u64)
        .saturating_mul(2)
        .saturating_add(256);
    // Per-test buffers (payload blocks, message buffers) go back to the kernel when a test
    // ends, so the daemon's memory returns to its baseline between tests.
    if !wirebench_sys::process::set_malloc_mmap_threshold(128 * 1024) {
        tracing::warn!(
            "cannot fix the allocator's mmap threshold; memory may stay resident after tests"
        );
    }
    match wirebench_sys::process::raise_nofile_limit(want_fds) {
        Ok(got) if got < want_fds => tracing::warn!(
            got,
            want_fds,
            "RLIMIT_NOFILE is below what --max-connections needs; accept will back off at the limit"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!("cannot raise RLIMIT_NOFILE: {e}"),
    }
    if a.allow_profile && keys_given.is_none() && !a.allow_profile_unauthenticated {
        return Err(anyhow!(
            "--allow-profile needs --auth-keys: a profile shows the whole host (kernel \
             symbols, other processes), so only authenticated clients get one"
        ));
    }
    cfg.allow_profile = a.allow_profile;
    cfg.profile_unauthenticated = a.allow_profile_unauthenticated;
    cfg.max_profiles = a.max_profiles;
    cfg.max_profile_hz = a.max_profile_hz;
    cfg.iperf3_bind = a.iperf3.then_some(SocketAddr::new(a.bind, a.iperf3_port));
    let history = match &a.db {
        Some(p) => Some(crate::history::daemon::DaemonHistory::start(p)?),
        None => None,
    };
    cfg.record_tap = history.as_ref().map(|h| h.tap());
    cfg.records_path = a.records.clone();
    cfg.records_max_bytes = a.records_max_size.max(4096);
    cfg.keys = keys;
    if let Some(id) = &a.identity {
        if !valid_identity(id) {
            return Err(anyhow!(
                "--identity '{id}' must be 1-64 characters of A-Z a-z 0-9 . _ @ -"
            ));
        }
        cfg.server_identity = id.clone();
    }
    let authenticated = cfg.keys.as_ref().map(|k| k.len());
    let identity = cfg.server_identity.clone();
    let daemon = Daemon::bind(cfg)?;
    let addr = daemon.local_addr()?;
    let daemon_iperf3 = daemon.iperf3_addr();
    let stop = Arc::new(AtomicBool::new(false));
    // SIGHUP stops the daemon like SIGTERM: running tests are aborted and recorded.
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the signal handler")?;
    }
    let handle = daemon.spawn().context("starting the daemon")?;
    let _pidfile = match &a.pidfile {
        Some(p) => Some(PidFile::write(p)?),
        None => None,
    };
    tracing::info!(%addr, %identity, "wirebench daemon listening");
    if let Some(addr) = daemon_iperf3 {
        tracing::info!(%addr, "serving iperf3 clients");
    }
    match authenticated {
        Some(n) => tracing::info!("authentication required ({n} identities)"),
        None if a.bind.is_loopback() => tracing::info!(
            "listening on loopback only, without authentication; use --auth-keys FILE and \
             --bind to serve other hosts"
        ),
        None => tracing::warn!("serving unauthenticated clients (--allow-unauthenticated)"),
    }
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if a.one_off && handle.stats().records > 0 {
            tracing::info!("one test served (--one-off): stopping");
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let running = handle.stats().running_tests;
    tracing::info!(
        running,
        "signal received: aborting running tests and shutting down"
    );
    let left = handle.shutdown(std::time::Duration::from_secs(20));
    if left > 0 {
        tracing::warn!(left, "connections still open after 20 s; exiting anyway");
    }
    if let Some(h) = history {
        // Every record was queued before shutdown returned: save what is left, then stop.
        h.finish();
    }
    tracing::info!("daemon stopped");
    Ok(())
}

/// The `--pidfile`: written (atomically) at start, removed when dropped.
struct PidFile(std::path::PathBuf);

impl PidFile {
    fn write(path: &std::path::Path) -> Result<PidFile> {
        crate::test_cmd::write_atomically(path, format!("{}\n", std::process::id()).as_bytes())
            .with_context(|| format!("writing the pid file {}", path.display()))?;
        Ok(PidFile(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
