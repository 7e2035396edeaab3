//! The subcommands. Output goes to stdout (results only); diagnostics to stderr via tracing.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use wirebench_net::client::{self, ClientConfig, Outcome};
use wirebench_net::server::{Daemon, ServerConfig};
use wirebench_net::NetError;
use wirebench_proto::auth::{valid_identity, Key, KeyTable};
use wirebench_proto::measure::HostRole;
use wirebench_proto::message::ErrorCode;
use wirebench_proto::session::SessionError;
use wirebench_proto::spec::{
    CloseMode, Direction, Limits, RecvPath, RrParams, SendPath, TestSpec, Workload,
};
use wirebench_report::analyze;
use wirebench_report::print;
use wirebench_report::schema::{ErrorInfo, RunRecord, RunResult, RunStatus, SCHEMA_VERSION};
use wirebench_stats::ci::ConfidenceLevel;

use crate::cli::{
    Cli, ClientArgs, Command, CrrArgs, KeygenArgs, RecvPathArg, RrArgs, SendPathArg, ServeArgs,
    StreamArgs, UdpArgs,
};
use crate::{EXIT_ABORTED, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};

/// Output format of a client command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Human,
    Json,
    Csv,
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    let wants_json = args.iter().any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    EXIT_USAGE
                } else {
                    EXIT_OK
                };
            }
            let msg = first_line(&e.to_string());
            if wants_json {
                let r = failed_result(None, None, false, "usage", &msg, None);
                print!("{}", print::json(&r));
            } else {
                eprintln!("wirebench: {msg} (see --help)");
            }
            return EXIT_USAGE;
        }
    };
    init_tracing(matches!(cli.command, Command::Serve(_)));
    match cli.command {
        Command::Serve(a) => match serve(&a) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("wirebench serve: {e:#}");
                EXIT_FAILED
            }
        },
        Command::Stream(a) => run_client(&a.c, stream_spec(&a)),
        Command::Rr(a) => run_client(&a.c, rr_spec(&a)),
        Command::Crr(a) => run_client(&a.c, crr_spec(&a)),
        Command::Udp(a) => run_client(&a.c, udp_spec(&a)),
        Command::Keygen(a) => match keygen(&a) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("wirebench keygen: {e:#}");
                EXIT_USAGE
            }
        },
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments")
        .trim()
        .trim_start_matches("error: ")
        .to_string()
}

fn init_tracing(daemon: bool) {
    let default = if daemon { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn keygen(a: &KeygenArgs) -> Result<()> {
    if !valid_identity(&a.identity) {
        return Err(anyhow!(
            "identity '{}' must be 1-64 characters of A-Z a-z 0-9 . _ @ -",
            a.identity
        ));
    }
    let mut raw = vec![0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut raw);
    let key = Key::from_bytes(raw).map_err(|e| anyhow!(e))?;
    println!("{} {}", a.identity, key.to_hex());
    Ok(())
}

/// Read and parse a key file; every error names the file.
fn load_key_table(path: &Path) -> Result<KeyTable> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the key file {}", path.display()))?;
    let table = KeyTable::parse(&text)
        .map_err(|e| anyhow!("malformed key file {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = std::fs::metadata(path) {
            if m.permissions().mode() & 0o077 != 0 {
                tracing::warn!(
                    "key file {} is readable by group or others; chmod 600 it",
                    path.display()
                );
            }
        }
    }
    Ok(table)
}

fn secs_to_duration(v: f64, flag: &str) -> Result<std::time::Duration> {
    if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
        return Err(anyhow!("{flag} must be between 0 and 86400 seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

fn serve(a: &ServeArgs) -> Result<()> {
    let keys = match &a.auth_keys {
        Some(p) => Some(Arc::new(load_key_table(p)?)),
        None => None,
    };
    if keys.is_none() && !a.bind.is_loopback() && !a.allow_unauthenticated {
        return Err(anyhow!(
            "refusing to listen on {} without authentication: pass --auth-keys FILE, or \
             --allow-unauthenticated to serve anyone who can reach this address",
            a.bind
        ));
    }
    let mut cfg = ServerConfig::new(SocketAddr::new(a.bind, a.port));
    cfg.limits = Limits {
        max_concurrent_tests: a.max_tests.max(1),
        max_flows: a.max_flows.max(1),
        max_duration_ms: secs_to_ms(a.max_duration)
            .ok_or_else(|| anyhow!("--max-duration must be positive"))?,
        max_rate_bps: a.max_rate,
        ..Limits::default()
    };
    cfg.max_conns_per_source = a
        .max_conns_per_source
        .unwrap_or_else(|| wirebench_net::server::default_conns_per_source(&cfg.limits))
        .max(1);
    cfg.max_connections = a.max_connections.max(1);
    cfg.max_pending_handshakes = a.max_handshakes.max(1);
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
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the signal handler")?;
    }
    let handle = daemon.spawn().context("starting the daemon")?;
    tracing::info!(%addr, %identity, "wirebench daemon listening");
    match authenticated {
        Some(n) => tracing::info!("authentication required ({n} identities)"),
        None if a.bind.is_loopback() => tracing::info!(
            "listening on loopback only, without authentication; use --auth-keys FILE and \
             --bind to serve other hosts"
        ),
        None => tracing::warn!("serving unauthenticated clients (--allow-unauthenticated)"),
    }
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
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
    tracing::info!("daemon stopped");
    Ok(())
}

/// The identity and key for `--auth`, or a message for the user.
fn client_credentials(a: &ClientArgs) -> Result<Option<(String, Key)>, String> {
    let Some(id) = &a.auth else {
        return Ok(None);
    };
    if !valid_identity(id) {
        return Err(format!(
            "--auth '{id}' must be 1-64 characters of A-Z a-z 0-9 . _ @ -"
        ));
    }
    let key = if let Some(f) = &a.auth_key_file {
        let text = std::fs::read_to_string(f)
            .map_err(|e| format!("cannot read the key file {}: {e}", f.display()))?;
        match KeyTable::parse(&text) {
            Ok(t) => t
                .get(id)
                .cloned()
                .ok_or_else(|| format!("the key file {} has no key for {id}", f.display()))?,
            Err(_) => Key::from_hex(&text).map_err(|e| {
                format!(
                    "{} is neither a key file nor a bare hex key: {e}",
                    f.display()
                )
            })?,
        }
    } else if let Ok(k) = std::env::var("WIREBENCH_AUTH_KEY") {
        Key::from_hex(&k).map_err(|e| format!("WIREBENCH_AUTH_KEY: {e}"))?
    } else {
        return Err(
            "--auth needs a key: --auth-key-file FILE or the WIREBENCH_AUTH_KEY variable".into(),
        );
    };
    Ok(Some((id.clone(), key)))
}

fn secs_to_ms(s: f64) -> Option<u64> {
    (s.is_finite() && s > 0.0 && s < 1e9).then(|| (s * 1000.0).round() as u64)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn failed_result(
    spec: Option<TestSpec>,
    server: Option<String>,
    embedded: bool,
    kind: &str,
    message: &str,
    field: Option<String>,
) -> RunResult {
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: wirebench_net::software(),
        started_unix_ms: unix_ms(),
        status: RunStatus::Failed,
        spec,
        server_address: server,
        embedded_server: embedded,
        runs: Vec::new(),
        aggregate: None,
        warnings: Vec::new(),
        error: Some(ErrorInfo {
            kind: kind.to_string(),
            message: message.to_string(),
            field,
        }),
    }
}

type SpecResult = Result<TestSpec, (String, Option<String>)>;

fn ms(v: f64, name: &str) -> Result<u64, (String, Option<String>)> {
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err((
            format!("{name} {v} is not a number of seconds"),
            Some(name.into()),
        ));
    }
    Ok((v * 1000.0).round() as u64)
}

fn to_u32(v: u64, flag: &str, field: &str) -> Result<u32, (String, Option<String>)> {
    u32::try_from(v).map_err(|_| (format!("{flag} {v} is too large"), Some(field.into())))
}

/// The fields every client command sets from its common flags.
fn common_spec(c: &ClientArgs, workload: Workload) -> SpecResult {
    let window = c
        .window
        .map(|w| to_u32(w, "--window", "window_bytes"))
        .transpose()?;
    Ok(TestSpec {
        workload,
        direction: Direction::Forward,
        flows: c.flows,
        duration_ms: ms(c.duration, "--duration")?,
        warmup_ms: ms(c.warmup, "--warmup")?,
        interval_ms: c.interval.map(|i| ms(i, "--interval")).transpose()?,
        msg_size_bytes: 1,
        window_bytes: window,
        congestion: c.congestion.clone(),
        nodelay: false,
        rate_bps: None,
        rr: None,
        server_cpu: c.affinity.and_then(|x| x.1),
        client_cpu: c.affinity.and_then(|x| x.0),
        send_path: None,
        recv_path: None,
        verify: false,
        threads: None,
        pin_threads: false,
    })
}

fn direction(reverse: bool, bidir: bool) -> Direction {
    if bidir {
        Direction::Bidir
    } else if reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    }
}

/// Validate a spec built from flags (the server validates again against its own limits).
/// Flows per direction the client itself accepts (and its embedded server allows); a remote
/// server applies its own `--max-flows`, which the client learns from its welcome.
const CLIENT_MAX_FLOWS: u32 = 10_000;

/// Limits of the client's own checks and of the embedded server: the defaults, with room for
/// many-flow runs.
fn client_limits() -> Limits {
    Limits {
        max_flows: CLIENT_MAX_FLOWS,
        ..Limits::default()
    }
}

fn checked(spec: TestSpec) -> SpecResult {
    spec.validate(&client_limits())
        .map_err(|e| (e.to_string(), Some(field_of(&e))))?;
    Ok(spec)
}

fn send_path(a: &StreamArgs) -> SendPath {
    if a.sendfile {
        return SendPath::Sendfile;
    }
    match a.send_path {
        SendPathArg::Copy => SendPath::Copy,
        SendPathArg::Sendfile => SendPath::Sendfile,
        SendPathArg::Splice => SendPath::Splice,
        SendPathArg::Zerocopy => SendPath::Zerocopy,
        SendPathArg::Uring => SendPath::Uring,
        SendPathArg::UringZc => SendPath::UringZc,
    }
}

fn recv_path(a: &StreamArgs) -> RecvPath {
    match a.recv_path {
        RecvPathArg::Copy => RecvPath::Copy,
        RecvPathArg::Discard => RecvPath::Discard,
        RecvPathArg::Splice => RecvPath::Splice,
        RecvPathArg::Zerocopy => RecvPath::Zerocopy,
        RecvPathArg::Uring => RecvPath::Uring,
    }
}

/// `wirebench stream`'s message size without `-l`: [`DEFAULT_STREAM_MSG_BYTES`], halved
/// until message size × connections fits the spec's buffer bound (at least 1 KiB).
fn default_stream_msg_size(flows: u32, bidir: bool) -> u64 {
    use wirebench_proto::spec::MAX_TOTAL_MSG_BUFFER_BYTES;
    let conns = u64::from(flows.max(1)) * if bidir { 2 } else { 1 };
    let mut size = DEFAULT_STREAM_MSG_BYTES;
    while size > 1024 && size * conns > MAX_TOTAL_MSG_BUFFER_BYTES {
        size /= 2;
    }
    size
}

/// `wirebench stream`'s message size for few flows: 1 MiB. Larger calls cost less CPU per
/// byte (on loopback under cubic, 1 MiB moves about 1.3x what 128 KiB does), so the default
/// measures the path rather than the per-call overhead.
const DEFAULT_STREAM_MSG_BYTES: u64 = 1 << 20;

fn stream_spec(a: &StreamArgs) -> SpecResult {
    let msg = a
        .msg_size
        .unwrap_or_else(|| default_stream_msg_size(a.c.flows, a.bidir));
    checked(TestSpec {
        direction: direction(a.reverse, a.bidir),
        msg_size_bytes: to_u32(msg, "--msg-size", "msg_size_bytes")?,
        nodelay: a.nodelay,
        rate_bps: a.rate,
        send_path: Some(send_path(a)),
        recv_path: Some(recv_path(a)),
        verify: a.verify,
        threads: a.threads,
        pin_threads: a.pin_threads,
        ..common_spec(&a.c, Workload::Stream)?
    })
}

fn rr_spec(a: &RrArgs) -> SpecResult {
    let workload = if a.udp { Workload::UdpRr } else { Workload::Rr };
    let mut spec = common_spec(&a.c, workload)?;
    // UDP requests and responses carry an 8-byte sequence number.
    let min = if a.udp {
        u64::from(wirebench_proto::spec::MIN_UDP_RR_BYTES)
    } else {
        1
    };
    let (req, resp) = (
        a.request_size.unwrap_or(min),
        a.response_size.unwrap_or(min),
    );
    spec.rr = Some(RrParams {
        request_size_bytes: to_u32(req, "--request-size", "rr.request_size_bytes")?,
        response_size_bytes: to_u32(resp, "--response-size", "rr.response_size_bytes")?,
        burst: a.burst,
        transactions_per_s: a.rate,
        max_outstanding: a.max_outstanding,
        close_mode: CloseMode::Orderly,
        udp_timeout_ms: a.udp_timeout,
    });
    spec.msg_size_bytes = spec.rr.as_ref().map_or(1, |r| r.request_size_bytes.max(1));
    checked(spec)
}

fn crr_spec(a: &CrrArgs) -> SpecResult {
    let mut spec = common_spec(&a.c, Workload::Crr)?;
    spec.rr = Some(RrParams {
        request_size_bytes: to_u32(a.request_size, "--request-size", "rr.request_size_bytes")?,
        response_size_bytes: to_u32(a.response_size, "--response-size", "rr.response_size_bytes")?,
        close_mode: if a.abortive_close {
            CloseMode::Abortive
        } else {
            CloseMode::Orderly
        },
        ..RrParams::default()
    });
    spec.msg_size_bytes = spec.rr.as_ref().map_or(1, |r| r.request_size_bytes.max(1));
    checked(spec)
}

fn udp_spec(a: &UdpArgs) -> SpecResult {
    checked(TestSpec {
        direction: direction(a.reverse, a.bidir),
        msg_size_bytes: to_u32(a.msg_size, "--msg-size", "msg_size_bytes")?,
        rate_bps: (a.rate > 0).then_some(a.rate),
        ..common_spec(&a.c, Workload::UdpStream)?
    })
}

fn field_of(e: &wirebench_proto::spec::SpecError) -> String {
    use wirebench_proto::spec::SpecError::*;
    match e {
        OutOfRange { field, .. } | Invalid { field, .. } | Inconsistent { field, .. } => {
            (*field).to_string()
        }
    }
}

fn resolve(host: &str, port: u16, v4: bool, v6: bool) -> Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve host '{host}'"))?
        .filter(|a| (!v4 || a.is_ipv4()) && (!v6 || a.is_ipv6()))
        .collect();
    addrs.first().copied().ok_or_else(|| {
        anyhow!(
            "host '{host}' has no {} address",
            if v4 { "IPv4" } else { "IPv6" }
        )
    })
}

fn net_error_kind(e: &NetError) -> (&'static str, Option<String>) {
    match e {
        NetError::Connect { .. } => ("connect", None),
        NetError::Session(SessionError::Busy(_)) => ("busy", None),
        NetError::Session(SessionError::Refused(m)) => (
            match m.code {
                ErrorCode::InvalidSpec => "invalid_spec",
                ErrorCode::AuthFailed => "auth_failed",
                ErrorCode::LimitExceeded => "limit_exceeded",
                _ => "refused",
            },
            m.field.clone(),
        ),
        NetError::Session(SessionError::AuthRequired { .. }) => ("auth_required", None),
        // The client session checks the spec against the limits the server announced.
        NetError::Session(SessionError::InvalidSpec(e)) => ("invalid_spec", Some(field_of(e))),
        NetError::Session(SessionError::Timeout { .. }) => ("timeout", None),
        NetError::SocketOption(_) => ("socket_option", None),
        NetError::Interrupted => ("interrupted", None),
        _ => ("protocol", None),
    }
}

/// Run a client command: `spec` built from its flags, `a` its common flags.
fn run_client(a: &ClientArgs, spec: SpecResult) -> i32 {
    let format = if a.json {
        Format::Json
    } else if a.csv {
        Format::Csv
    } else {
        Format::Human
    };
    let spec = match spec {
        Ok(s) => s,
        Err((msg, field)) => {
            return finish(
                format,
                a.output.as_deref(),
                failed_result(None, None, false, "usage", &msg, field),
                EXIT_USAGE,
            );
        }
    };
    // Each data connection is a descriptor here, and up to three more when the server is
    // embedded (its socket, and a handle for eviction while it handshakes).
    let conns = u64::from(spec.connection_count());
    let want_fds = conns.saturating_mul(4).saturating_add(1024);
    let got_fds = match wirebench_sys::process::raise_nofile_limit(want_fds) {
        Ok(got) => Some(got),
        Err(e) => {
            tracing::warn!("cannot raise RLIMIT_NOFILE: {e}");
            None
        }
    };
    // With the server embedded, both ends' sockets live in this process: at least two
    // descriptors per connection, plus the server's handshake handles (at most its
    // handshake cap) and some to spare. Say so now rather than time out in accept.
    let need_embedded = conns.saturating_mul(2).saturating_add(512);
    if let (None, Some(got)) = (&a.host, got_fds) {
        if got < need_embedded {
            let msg = format!(
                "{conns} connections with the server embedded in this process need about \
                 {need_embedded} file descriptors (both ends' sockets), but RLIMIT_NOFILE is \
                 {got} and its hard limit cannot be raised here; run `wirebench serve` as its \
                 own process and pass -H, or use fewer flows"
            );
            let r = failed_result(Some(spec), None, true, "limit", &msg, None);
            return finish(format, a.output.as_deref(), r, EXIT_FAILED);
        }
    }
    // The embedded server lives as long as this function.
    let mut _embedded = None;
    let (server, embedded) = match &a.host {
        Some(h) => match resolve(h, a.port, a.ipv4, a.ipv6) {
            Ok(addr) => (addr, false),
            Err(e) => {
                let r = failed_result(
                    Some(spec),
                    Some(h.clone()),
                    false,
                    "resolve",
                    &format!("{e:#}"),
                    None,
                );
                return finish(format, a.output.as_deref(), r, EXIT_FAILED);
            }
        },
        None => {
            let ip: IpAddr = if a.ipv6 {
                Ipv6Addr::LOCALHOST.into()
            } else {
                Ipv4Addr::LOCALHOST.into()
            };
            // The embedded server serves this process only: as many flows as the client may
            // ask for, and the descriptors they need (both ends live in this process).
            let mut scfg = ServerConfig::new(SocketAddr::new(ip, 0));
            scfg.limits = client_limits();
            let conns = spec.connection_count() as usize;
            scfg.max_connections = scfg.max_connections.max(conns + 64);
            scfg.max_conns_per_source = scfg.max_conns_per_source.max(conns + 64);
            match Daemon::bind(scfg).and_then(|d| {
                d.spawn()
                    .map_err(NetError::io("starting the embedded server"))
            }) {
                Ok(h) => {
                    let addr = h.addr();
                    _embedded = Some(h);
                    (addr, true)
                }
                Err(e) => {
                    let r = failed_result(
                        Some(spec),
                        None,
                        true,
                        "embedded_server",
                        &e.to_string(),
                        None,
                    );
                    return finish(format, a.output.as_deref(), r, EXIT_FAILED);
                }
            }
        }
    };
    let same_host = embedded || server.ip().is_loopback();
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt));
    }
    let mut cfg = ClientConfig::new(server, spec.clone());
    match client_credentials(a) {
        Ok(c) => cfg.credentials = c,
        Err(msg) => {
            let r = failed_result(
                Some(spec),
                Some(server.to_string()),
                embedded,
                "usage",
                &msg,
                None,
            );
            return finish(format, a.output.as_deref(), r, EXIT_USAGE);
        }
    }
    let (min_runs, max_runs) = a.iterations.unwrap_or((1, 1));
    let level = ConfidenceLevel::from_pct(a.confidence.0).unwrap_or(ConfidenceLevel::P99);
    let target = a.confidence.1;

    let mut result = RunResult {
        schema_version: SCHEMA_VERSION,
        tool: wirebench_net::software(),
        started_unix_ms: unix_ms(),
        status: RunStatus::Completed,
        spec: Some(spec.clone()),
        server_address: Some(server.to_string()),
        embedded_server: embedded,
        runs: Vec::new(),
        aggregate: None,
        warnings: Vec::new(),
        error: None,
    };
    let mut code = EXIT_OK;
    let stdout = std::io::stdout();
    for index in 0..max_runs {
        if max_runs > 1 && format == Format::Human {
            let _ = writeln!(stdout.lock(), "run {} of at most {max_runs}", index + 1);
        }
        let mut on_interval = |m: &wirebench_proto::message::IntervalMsg| {
            if format != Format::Human {
                return;
            }
            let mut out = stdout.lock();
            match &m.rr {
                // A request/response client's view: the server's counts echo it.
                Some(rr) if m.host == HostRole::Client => {
                    let row = wirebench_report::analyze_rr::rr_interval_row(m.host, rr);
                    let _ = writeln!(out, "{}", print::rr_interval_line(&row));
                }
                Some(_) => {}
                None => {
                    for row in analyze::interval_rows(m.host, &spec, &m.sample) {
                        let _ = writeln!(out, "{}", print::interval_line(&row));
                    }
                }
            }
        };
        match client::run(&cfg, &interrupt, &mut on_interval) {
            Ok(run) => {
                let status = match &run.outcome {
                    Outcome::Completed => RunStatus::Completed,
                    Outcome::Interrupted => RunStatus::Interrupted,
                    Outcome::Aborted(_) => RunStatus::Aborted,
                };
                let summary = run
                    .client
                    .as_ref()
                    .map(|c| analyze::summarize(&spec, c, run.server.as_ref(), same_host));
                if let Outcome::Aborted(reason) = &run.outcome {
                    result
                        .warnings
                        .push(format!("run {}: aborted: {reason}", index + 1));
                    result.status = RunStatus::Aborted;
                    code = EXIT_ABORTED;
                }
                if status == RunStatus::Interrupted {
                    result.status = RunStatus::Interrupted;
                    code = EXIT_INTERRUPTED;
                }
                result.runs.push(RunRecord {
                    index,
                    status,
                    client: run.client,
                    server: run.server,
                    summary,
                });
            }
            Err(e) => {
                let (kind, field) = net_error_kind(&e);
                result.status = if matches!(e, NetError::Interrupted) {
                    RunStatus::Interrupted
                } else {
                    RunStatus::Failed
                };
                result.error = Some(ErrorInfo {
                    kind: kind.into(),
                    message: e.to_string(),
                    field,
                });
                code = if matches!(e, NetError::Interrupted) {
                    EXIT_INTERRUPTED
                } else {
                    EXIT_FAILED
                };
                break;
            }
        }
        if code != EXIT_OK {
            break;
        }
        if max_runs > 1 && result.runs.len() as u32 >= min_runs.max(2) {
            let agg = analyze::aggregate(&result.runs, level, target);
            let met = agg.target_met;
            result.aggregate = Some(agg);
            if met {
                break;
            }
        }
    }
    finish(format, a.output.as_deref(), result, code)
}

/// Print the result in the chosen format, write `--output`, return `code`.
fn finish(format: Format, output: Option<&Path>, r: RunResult, code: i32) -> i32 {
    let text = match format {
        Format::Json => print::json(&r),
        Format::Csv => print::csv(&r),
        Format::Human => print::human(&r),
    };
    let mut code = code;
    if let Some(path) = output {
        if let Err(e) = write_atomically(path, print::json(&r).as_bytes()) {
            eprintln!("wirebench: cannot write {}: {e:#}", path.display());
            if code == EXIT_OK {
                code = EXIT_FAILED;
            }
        }
    }
    if format == Format::Human {
        if let Some(err) = &r.error {
            eprintln!("wirebench: {}: {}", err.kind, err.message);
            let _ = std::io::stdout().write_all(text.as_bytes());
            return code;
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    code
}

/// Write `bytes` to `path` via a temporary file in the same directory, fsync, rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| anyhow!("{} is not a file path", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = (|| -> Result<()> {
        let mut f =
            std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path).with_context(|| format!("renaming onto {}", path.display()))?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_stream_message_size_fits_the_buffer_bound() {
        use wirebench_proto::spec::MAX_TOTAL_MSG_BUFFER_BYTES;
        assert_eq!(default_stream_msg_size(1, false), 1 << 20);
        assert_eq!(default_stream_msg_size(512, false), 1 << 20);
        assert_eq!(default_stream_msg_size(512, true), 512 << 10);
        assert_eq!(default_stream_msg_size(1000, false), 512 << 10);
        assert_eq!(default_stream_msg_size(10_000, true), 16 << 10);
        for flows in [1u32, 3, 100, 513, 4000, 10_000] {
            for bidir in [false, true] {
                let conns = u64::from(flows) * if bidir { 2 } else { 1 };
                assert!(
                    default_stream_msg_size(flows, bidir) * conns <= MAX_TOTAL_MSG_BUFFER_BYTES
                );
            }
        }
    }
}
