//! The runner's configuration from a test's client flags: the target, credentials, connection
//! options and repetition policy (the test commands, sweep and study points).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_net::runner::{Repetition, RunnerConfig, Target};
use wirebench_proto::auth::{valid_identity, Key, KeyTable};
use wirebench_stats::ci::ConfidenceLevel;

use crate::args::ClientArgs;
use crate::specs::client_limits;

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
        let text = crate::keyfile::read_key_file(f, a.insecure_key_file)?;
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

/// `--from AGENT[:PORT]`: a host name or address, with a port or the default one
/// (`[v6]:port` for an IPv6 address with a port).
fn agent_address(agent: &str, v4: bool, v6: bool) -> Result<SocketAddr> {
    if let Ok(a) = agent.parse::<SocketAddr>() {
        return Ok(a);
    }
    let default = wirebench_net::DEFAULT_PORT;
    if agent.parse::<IpAddr>().is_ok() {
        return resolve(agent, default, v4, v6);
    }
    match agent.rsplit_once(':') {
        Some((host, port)) => {
            let port = port
                .parse::<u16>()
                .map_err(|_| anyhow!("'{port}' in '{agent}' is not a port"))?;
            resolve(host, port, v4, v6)
        }
        None => resolve(agent, default, v4, v6),
    }
}

/// The runner's configuration from the client flags: the target (resolved, or the embedded
/// server), credentials, connection options and the repetition policy.
pub fn runner_config(a: &ClientArgs) -> Result<RunnerConfig, ErrorInfo> {
    let port = a.port.unwrap_or(wirebench_net::DEFAULT_PORT);
    let target = match &a.host {
        Some(h) => Target::Remote(
            resolve(h, port, a.ipv4, a.ipv6)
                .map_err(|e| ErrorInfo::new(ErrorKind::Resolve, format!("{e:#}")))?,
        ),
        None => Target::Embedded(if a.ipv6 {
            IpAddr::V6(Ipv6Addr::LOCALHOST)
        } else {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }),
    };
    let target = match (&a.from, target) {
        (Some(agent), Target::Remote(server)) => Target::ThirdParty {
            agent: agent_address(agent, a.ipv4, a.ipv6)
                .map_err(|e| ErrorInfo::new(ErrorKind::Resolve, format!("--from: {e:#}")))?,
            server,
        },
        (_, target) => target,
    };
    let mut cfg = RunnerConfig::new(target);
    cfg.embedded_limits = client_limits();
    cfg.bind = a.bind;
    cfg.data_port = a.cport;
    if let Some(t) = crate::secs_to_ms(a.connect_timeout) {
        cfg.connect_timeout = Duration::from_millis(t);
    }
    cfg.credentials = client_credentials(a).map_err(|msg| ErrorInfo::new(ErrorKind::Usage, msg))?;
    let (min_runs, max_runs) = a.iterations.unwrap_or((1, 1));
    let (level, width) = a.confidence.unwrap_or((99, 5.0));
    cfg.repetition = Repetition {
        min_runs,
        max_runs,
        level: ConfidenceLevel::from_pct(level).unwrap_or(ConfidenceLevel::P99),
        target_width_pct: width,
    };
    Ok(cfg)
}
