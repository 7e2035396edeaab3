//! The mesh's real runner: each test a third-party test, the coordinator asking the client
//! host's daemon to run it against the server host's daemon.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use wirebench_model::result::RunResult;
use wirebench_model::spec::TestSpec;
use wirebench_net::runner::{Quiet, Runner, RunnerConfig, Target};

use super::exec::TestRunner;
use super::plan::MeshPlan;

/// Runs a plan's tests between the daemons of `hosts`.
pub struct DaemonRunner {
    /// Per plan test: its spec and the runner's configuration (credentials, timeouts,
    /// repetitions) from its flags.
    tests: Vec<(TestSpec, RunnerConfig)>,
    hosts: Vec<SocketAddr>,
    interrupt: Arc<AtomicBool>,
}

impl DaemonRunner {
    /// The runner of `plan` over the resolved `hosts`, authenticating as `auth` with the key
    /// in `key_file` (or `WIREBENCH_AUTH_KEY`).
    pub fn new(
        plan: &MeshPlan,
        hosts: &[SocketAddr],
        auth: Option<&str>,
        key_file: Option<&Path>,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<DaemonRunner, String> {
        let first = hosts.first().ok_or("no host")?;
        let mut tests = Vec::new();
        for t in &plan.tests {
            let mut argv: Vec<String> = t.line.split_whitespace().map(String::from).collect();
            argv.extend([
                "-H".into(),
                first.ip().to_string(),
                "-p".into(),
                first.port().to_string(),
            ]);
            if let Some(id) = auth {
                argv.extend(["--auth".into(), id.to_string()]);
            }
            if let Some(f) = key_file {
                argv.extend(["--auth-key-file".into(), f.display().to_string()]);
            }
            let (spec, c, _) = crate::sweep::plan::point_spec(&argv)?;
            let cfg = crate::client::runner_config(&c).map_err(|e| e.message)?;
            tests.push((spec, cfg));
        }
        Ok(DaemonRunner {
            tests,
            hosts: hosts.to_vec(),
            interrupt: Arc::clone(interrupt),
        })
    }
}

impl TestRunner for DaemonRunner {
    fn run(&self, client: usize, server: usize, test: usize) -> RunResult {
        let (spec, cfg) = &self.tests[test];
        let mut cfg = cfg.clone();
        cfg.target = Target::ThirdParty {
            agent: self.hosts[client],
            server: self.hosts[server],
        };
        Runner::new(cfg, Arc::clone(&self.interrupt)).run(spec, &mut Quiet)
    }
}
