//! `wirebench serve`: the daemon's command line (its arguments, [`ServeArgs`]) — limits,
//! keys, records, signals.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use wirebench_model::spec::Limits;
use wirebench_net::daemon::{Daemon, ServerConfig};
use wirebench_proto::auth::{valid_identity, KeyTable};

use crate::args::{parse_rate, parse_size, secs_between, MAX_FLAG_SECS};

/// `wirebench serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback needs --auth-keys (or, explicitly,
    /// --allow-unauthenticated).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Require HMAC challenge-response authentication with the keys in FILE
    /// (`IDENTITY HEX-KEY` per line; see `wirebench keygen`).
    #[arg(long, value_name = "FILE")]
    pub auth_keys: Option<std::path::PathBuf>,
    /// Accept a key file that group or others may read (refused otherwise).
    #[arg(long)]
    pub insecure_key_file: bool,
    /// Accept unauthenticated clients on a non-loopback address.
    #[arg(long)]
    pub allow_unauthenticated: bool,
    /// This server's identity, covered by the clients' MACs (default: the host name).
    #[arg(long)]
    pub identity: Option<String>,
    /// Largest aggregate payload rate of one test, bits/s (K/M/G = 10^3/10^6/10^9). Tests
    /// must then ask for a rate, and a test whose data arrives faster is aborted.
    #[arg(long, value_parser = parse_rate)]
    pub max_rate: Option<u64>,
    /// Connections handled at once (any kind, all sources).
    #[arg(long, default_value_t = 1024)]
    pub max_connections: usize,
    /// Connections from one source address at once (default: 2 x max-flows + 16).
    #[arg(long)]
    pub max_conns_per_source: Option<usize>,
    /// Connections still in their handshake; past this the oldest is closed.
    #[arg(long, default_value_t = 256)]
    pub max_handshakes: usize,
    /// Absolute deadline for a connection's handshake, seconds.
    #[arg(long, default_value_t = 5.0, value_parser = secs_between(0.001, 86_400.0))]
    pub handshake_timeout: f64,
    /// While a test runs: a client silent for this long is gone, seconds.
    #[arg(long, default_value_t = 5.0, value_parser = secs_between(0.001, 86_400.0))]
    pub idle_timeout: f64,
    /// After the server's engine finished: how long to wait for the client's results, seconds.
    #[arg(long, default_value_t = 15.0, value_parser = secs_between(0.001, 86_400.0))]
    pub results_timeout: f64,
    /// Append a JSON line per test served (completed, aborted or failed) to FILE.
    #[arg(long, value_name = "FILE")]
    pub records: Option<std::path::PathBuf>,
    /// Rotate the records file to FILE.1 before it passes this size (K/M/G = 1024^n).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub records_max_size: u64,
    /// Also save every test record to this results history database (SQLite; created if
    /// needed), as `history import` of the records file would, marked as from the daemon:
    /// `wirebench history list --db PATH` reads it. A record the database cannot take is
    /// logged; the records file keeps it.
    #[arg(long, value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,
    /// Serve OpenMetrics (Prometheus) text at http://ADDR/metrics: the last result per
    /// peer, workload and direction (throughput, round-trip percentiles, transactions/s,
    /// loss, retransmits, CPU) and the daemon's health (tests, refusals by reason,
    /// connections, descriptors, memory). ADDR is IP:PORT, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// TCP port.
    #[arg(short, long, default_value_t = wirebench_net::DEFAULT_PORT)]
    pub port: u16,
    /// Tests allowed to run at once; more get an explicit busy answer.
    #[arg(long, default_value_t = 4)]
    pub max_tests: u32,
    /// Tests one peer (its identity, or its source address without authentication) may run
    /// at once; default 1 when --max-tests is above 1, so one peer cannot hold every slot.
    #[arg(long)]
    pub max_tests_per_peer: Option<u32>,
    /// Largest number of flows per direction accepted.
    #[arg(long, default_value_t = 128)]
    pub max_flows: u32,
    /// Longest test accepted, seconds.
    #[arg(long, default_value_t = 3600.0, value_parser = secs_between(0.1, MAX_FLAG_SECS))]
    pub max_duration: f64,
    /// Serve one test (whatever its outcome, once it is recorded), then exit (like iperf3 -1).
    #[arg(short = '1', long = "one-off")]
    pub one_off: bool,
    /// Profile this host's CPUs when a client's test asks (`--profile`): perf sampling of
    /// every CPU the server end uses, classified into categories, sent back with the
    /// results. Off by default (a profile shows the host's kernel and other processes'
    /// activity); without it such a test runs unprofiled at this end and says so.
    /// Needs --auth-keys: a profile shows the whole host, so only authenticated clients
    /// get one.
    #[arg(long)]
    pub allow_profile: bool,
    /// Run third-party tests: an authenticated client (`stream -H B --from THIS`) may ask
    /// this daemon to run a test as the client against another daemon B, which must itself
    /// accept the client's identity (it issues the client a single-use ticket for that
    /// test). This daemon's limits and per-peer caps apply to the test as to the client's
    /// own. Off by default. Needs --auth-keys.
    #[arg(long)]
    pub allow_third_party: bool,
    /// Profiles taken at once (each samples every CPU); a test beyond runs unprofiled here.
    #[arg(long, default_value_t = 1)]
    pub max_profiles: u32,
    /// Highest sampling frequency a client's --profile-hz may ask for, Hz per CPU (a higher
    /// request is sampled at this frequency; the report says which).
    #[arg(long, default_value_t = wirebench_net::daemon::DEFAULT_MAX_PROFILE_HZ)]
    pub max_profile_hz: u32,
    /// Profile unauthenticated clients too: only for a daemon nobody but root can reach
    /// (a study's, inside the study's own network namespace).
    #[arg(long, hide = true, requires = "allow_profile")]
    pub allow_profile_unauthenticated: bool,
    /// Write the daemon's PID to FILE while it runs (removed at exit).
    #[arg(long, value_name = "FILE")]
    pub pidfile: Option<std::path::PathBuf>,
    /// Also serve stock iperf3 clients (`iperf3 -c`, 3.9 and later; TCP) on --iperf3-port,
    /// beside the native port, under the same limits. iperf3 clients cannot authenticate:
    /// with --auth-keys their tests are refused, and on an address other than loopback
    /// --iperf3 needs --allow-unauthenticated.
    #[arg(long)]
    pub iperf3: bool,
    /// TCP port of the iperf3 frontend.
    #[arg(long, default_value_t = wirebench_iperf3::wire::DEFAULT_PORT, requires = "iperf3")]
    pub iperf3_port: u16,
}

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
    if a.allow_third_party && keys_given.is_none() {
        return Err(anyhow!(
            "--allow-third-party needs --auth-keys: only authenticated clients may have this \
             daemon open connections to another host"
        ));
    }
    cfg.allow_third_party = a.allow_third_party;
    cfg.allow_profile = a.allow_profile;
    cfg.profile_unauthenticated = a.allow_profile_unauthenticated;
    cfg.max_profiles = a.max_profiles;
    cfg.max_profile_hz = a.max_profile_hz;
    cfg.iperf3_bind = a.iperf3.then_some(SocketAddr::new(a.bind, a.iperf3_port));
    let history = match &a.db {
        Some(p) => Some(crate::history::daemon::DaemonHistory::start(p)?),
        None => None,
    };
    let metrics = match a.metrics {
        Some(addr) => Some(crate::metrics::Metrics::start(addr)?),
        None => None,
    };
    cfg.record_taps = history
        .iter()
        .map(|h| h.tap())
        .chain(metrics.iter().map(|m| m.tap()))
        .collect();
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
    if let Some(m) = &metrics {
        m.set_health(handle.counters());
        tracing::info!(addr = %m.addr(), "serving metrics at /metrics");
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
    if let Some(m) = metrics {
        m.finish();
    }
    tracing::info!("daemon stopped");
    Ok(())
}

/// The `--pidfile`: written (atomically) at start, removed when dropped.
struct PidFile(std::path::PathBuf);

impl PidFile {
    fn write(path: &std::path::Path) -> Result<PidFile> {
        crate::output::write_atomically(path, format!("{}\n", std::process::id()).as_bytes())
            .with_context(|| format!("writing the pid file {}", path.display()))?;
        Ok(PidFile(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
