//! The client commands (`stream`, `rr`, `crr`, `udp`): flags to a spec, the [`Runner`] to a
//! result, the result to the chosen output. Nothing here measures or computes.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::result::{RunRecord, RunResult, RunStatus};
use wirebench_model::spec::TestSpec;
use wirebench_net::runner::{failed_result, Observer, Repetition, Runner, RunnerConfig, Target};
use wirebench_proto::auth::{valid_identity, Key, KeyTable};
use wirebench_proto::message::IntervalMsg;
use wirebench_report::print;
use wirebench_stats::ci::ConfidenceLevel;

use crate::cli::ClientArgs;
use crate::specs::{client_limits, SpecResult};
use crate::{EXIT_ABORTED, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// Output format of a client command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Tables and live lines for a person.
    Human,
    /// One RunResult document.
    Json,
    /// CSV rows.
    Csv,
}

impl Format {
    /// The format the flags ask for.
    pub fn of(a: &ClientArgs) -> Format {
        if a.json {
            Format::Json
        } else if a.csv {
            Format::Csv
        } else {
            Format::Human
        }
    }
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

/// Prints the live lines of a human run.
struct Live {
    format: Format,
}

impl Observer for Live {
    fn run_started(&mut self, index: u32, max_runs: u32) {
        if max_runs > 1 && self.format == Format::Human {
            let _ = writeln!(
                std::io::stdout().lock(),
                "run {} of at most {max_runs}",
                index + 1
            );
        }
    }

    fn interval(&mut self, spec: &TestSpec, m: &IntervalMsg) {
        if self.format != Format::Human {
            return;
        }
        let mut out = std::io::stdout().lock();
        for line in print::interval_lines(m.host, spec, &m.sample) {
            let _ = writeln!(out, "{line}");
        }
    }

    fn run_finished(&mut self, _record: &RunRecord) {}
}

/// The exit code of a result.
pub fn exit_code(r: &RunResult) -> i32 {
    match r.status {
        RunStatus::Completed => EXIT_OK,
        RunStatus::Interrupted => EXIT_INTERRUPTED,
        RunStatus::Aborted => EXIT_ABORTED,
        RunStatus::Invalid => EXIT_INVALID,
        RunStatus::Failed => match r.error.as_ref().map(|e| e.kind) {
            Some(ErrorKind::Usage) => EXIT_USAGE,
            _ => EXIT_FAILED,
        },
    }
}

/// Run a client command: `spec` built from its flags, `a` its common flags.
pub fn run_client(a: &ClientArgs, spec: SpecResult) -> i32 {
    let format = Format::of(a);
    let output = a.output.as_deref();
    let spec = match spec {
        Ok(s) => s,
        Err((msg, field)) => {
            let mut info = ErrorInfo::new(ErrorKind::Usage, msg);
            info.field = field;
            return finish(format, output, &failed_result(None, None, false, info));
        }
    };
    let target = match &a.host {
        Some(h) => match resolve(h, a.port, a.ipv4, a.ipv6) {
            Ok(addr) => Target::Remote(addr),
            Err(e) => {
                let info = ErrorInfo::new(ErrorKind::Resolve, format!("{e:#}"));
                let r = failed_result(Some(spec), Some(h.clone()), false, info);
                return finish(format, output, &r);
            }
        },
        None => Target::Embedded(if a.ipv6 {
            IpAddr::V6(Ipv6Addr::LOCALHOST)
        } else {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }),
    };
    let mut cfg = RunnerConfig::new(target);
    cfg.embedded_limits = client_limits();
    match client_credentials(a) {
        Ok(c) => cfg.credentials = c,
        Err(msg) => {
            let info = ErrorInfo::new(ErrorKind::Usage, msg);
            let r = failed_result(Some(spec), None, a.host.is_none(), info);
            return finish(format, output, &r);
        }
    }
    let (min_runs, max_runs) = a.iterations.unwrap_or((1, 1));
    cfg.repetition = Repetition {
        min_runs,
        max_runs,
        level: ConfidenceLevel::from_pct(a.confidence.0).unwrap_or(ConfidenceLevel::P99),
        target_width_pct: a.confidence.1,
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt));
    }
    let mut runner = Runner::new(cfg, interrupt);
    let result = runner.run(&spec, &mut Live { format });
    finish(format, output, &result)
}

/// Print the result in the chosen format, write `--output`, return the exit code.
pub fn finish(format: Format, output: Option<&Path>, r: &RunResult) -> i32 {
    let text = match format {
        Format::Json => print::json(r),
        Format::Csv => print::csv(r),
        Format::Human => print::human(r),
    };
    let mut code = exit_code(r);
    if let Some(path) = output {
        if let Err(e) = write_atomically(path, print::json(r).as_bytes()) {
            eprintln!("wirebench: cannot write {}: {e:#}", path.display());
            if code == EXIT_OK {
                code = EXIT_FAILED;
            }
        }
    }
    if format == Format::Human {
        if let Some(err) = &r.error {
            eprintln!("wirebench: {}", print::error_text(err));
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
