//! Building a named lab (`up`) with the one builder ([`crate::builder`]), verifying it
//! against the kernel's read-back, starting its emulator process, and removing labs
//! (`down`, `down_all`, stale detection).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::readback::{self, EndpointReport, LabReport};
use super::spec::on_off;
use super::state::{self, EmulatorProc, Files, LabState, Phase, ProcRef, STATE_VERSION};
use super::sys;
use super::{
    is_root, names, DownReport, Endpoint, LabManager, LabSpec, NamedError, OffloadSetting,
    OwnedLab, StaleLab, STATE_DIR_ENV, SUBNET_IPV4, SUBNET_IPV6,
};
use crate::builder::{self, Layout, EMU_OFFLOADS_OFF};

/// How long `up` waits for the emulator to answer.
const EMULATOR_READY: Duration = Duration::from_secs(5);

fn refused(setting: &str, value: &str, detail: String) -> NamedError {
    NamedError::Refused {
        setting: setting.into(),
        value: value.into(),
        detail,
    }
}

/// Compares one endpoint's read-back with the spec.
fn verify_endpoint(
    spec: &LabSpec,
    side: Endpoint,
    ep: Option<&EndpointReport>,
) -> Result<(), NamedError> {
    let mtu = spec.mtu.to_string();
    let ns = side.ns(&spec.name);
    let Some(ep) = ep else {
        return Err(NamedError::Command {
            cmd: "read-back".into(),
            stderr: format!("namespace {ns} is missing"),
        });
    };
    if ep.mtu != spec.mtu {
        return Err(refused(
            "mtu",
            &mtu,
            format!("{} in {ns} reports mtu {}", ep.ifname, ep.mtu),
        ));
    }
    let mut asked: Vec<(String, bool, String)> = Vec::new();
    if spec.uses_emulator() {
        for f in EMU_OFFLOADS_OFF {
            let o = OffloadSetting {
                name: f.to_string(),
                on: false,
            };
            asked.push((
                o.ethtool_names().1.into(),
                false,
                format!("{f}=off (needed by the emulator)"),
            ));
        }
    }
    for o in &spec.offloads {
        asked.push((o.ethtool_names().1.into(), o.on, o.to_arg()));
    }
    for (feature, on, arg) in asked {
        let Some(rb) = readback::evaluate(&ep.ethtool_k_raw, &feature, Some(on)) else {
            return Err(NamedError::InvalidSetting {
                setting: "offload".into(),
                value: arg,
                reason: format!("`ethtool -k {}` lists no feature {feature:?}", ep.ifname),
            });
        };
        if rb.state != on_off(on) {
            return Err(refused(
                "offload",
                &arg,
                format!("ethtool -k {} in {ns}: {}", ep.ifname, rb.lines.join(", ")),
            ));
        }
    }
    let rate_here = side == Endpoint::Client || spec.rate_both;
    if let (Some(rate), true) = (spec.rate_bps, rate_here) {
        let tbf = ep.qdiscs.iter().find(|q| q.root && q.kind == "tbf");
        let ok = tbf
            .and_then(|q| q.rate_bps)
            .is_some_and(|got| got.abs_diff(rate) <= 8 + rate / 1000);
        if !ok {
            let kinds: Vec<String> = ep
                .qdiscs
                .iter()
                .map(|q| format!("{} {:?}", q.kind, q.rate_bps))
                .collect();
            return Err(refused(
                "rate",
                &format!("{rate}bit"),
                format!("tc reports {kinds:?} on {}", ep.ifname),
            ));
        }
    }
    if let Some(cc) = &spec.cc {
        let mut subnets = vec![SUBNET_IPV4];
        if spec.ipv6 {
            subnets.push(SUBNET_IPV6);
        }
        for net in subnets {
            let got = ep
                .routes
                .iter()
                .find(|rt| rt.dst == net)
                .and_then(|rt| rt.congctl.clone());
            if got.as_deref() != Some(cc.as_str()) {
                return Err(refused(
                    "cc",
                    cc,
                    format!("route {net} in {ns} has congctl {got:?}"),
                ));
            }
        }
    }
    for s in spec
        .sysctls
        .iter()
        .filter(|s| s.sides.includes(side == Endpoint::Client))
    {
        let got = ep
            .sysctls
            .iter()
            .find(|g| g.key == s.key)
            .map(|g| g.value.clone())
            .unwrap_or_default();
        let norm = |v: &str| v.split_whitespace().collect::<Vec<_>>().join(" ");
        if norm(&got) != norm(&s.value) {
            return Err(refused(
                "sysctl",
                &s.to_arg(),
                format!("{ns} reads back {got:?}"),
            ));
        }
    }
    for (flag, want, got) in [
        ("rps", spec.rps_of(side == Endpoint::Server), &ep.rps_cpus),
        ("xps", spec.xps_cpus.as_ref(), &ep.xps_cpus),
    ] {
        if let Some(want) = want {
            let num = |m: &str| u128::from_str_radix(&m.replace(',', ""), 16).ok();
            if got.as_deref().and_then(num) != num(want) {
                return Err(refused(flag, want, format!("{ns} reads back {got:?}")));
            }
        }
    }
    Ok(())
}

/// Compares the read-back with the spec; the first difference is [`NamedError::Refused`].
fn verify(spec: &LabSpec, r: &LabReport) -> Result<(), NamedError> {
    let mtu = spec.mtu.to_string();
    verify_endpoint(spec, Endpoint::Client, r.client.as_ref())?;
    verify_endpoint(spec, Endpoint::Server, r.server.as_ref())?;
    if spec.uses_emulator() {
        let m = r
            .middle
            .as_ref()
            .map(|m| (m.mtu_client_side, m.mtu_server_side));
        if m != Some((spec.mtu, spec.mtu)) {
            return Err(refused(
                "mtu",
                &mtu,
                format!("middle namespace reports {m:?}"),
            ));
        }
        let ok = r
            .emulator
            .as_ref()
            .is_some_and(|e| e.alive && e.status.as_ref().is_some_and(|s| s.failure.is_none()));
        if !ok {
            return Err(NamedError::Emulator {
                name: spec.name.clone(),
                detail: format!("not healthy after start: {:?}", r.emulator),
            });
        }
    }
    Ok(())
}

fn log_tail(files: &Files) -> String {
    let text = std::fs::read_to_string(&files.log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

impl LabManager {
    /// Builds lab `spec.name`, reads it back and verifies it; persistent (it stays until
    /// [`down`](Self::down)). On any error everything built so far is removed.
    pub fn up(&self, spec: &LabSpec) -> Result<LabReport, NamedError> {
        self.build(spec, None)
    }

    /// Like [`up`](Self::up), but the lab belongs to this process: it is stale once the
    /// process is gone, and removed when the returned guard drops.
    pub fn up_owned(&self, spec: &LabSpec) -> Result<OwnedLab, NamedError> {
        let report = self.build(spec, ProcRef::current())?;
        Ok(OwnedLab {
            mgr: self.clone(),
            name: spec.name.clone(),
            report,
        })
    }

    fn build(&self, spec: &LabSpec, owner: Option<ProcRef>) -> Result<LabReport, NamedError> {
        spec.validate()?;
        if !is_root() {
            return Err(NamedError::NotRoot);
        }
        state::ensure_dir(&self.dir)?;
        let files = Files::new(&self.dir, &spec.name);
        let mut st = LabState {
            version: STATE_VERSION,
            spec: spec.clone(),
            phase: Phase::Building,
            creator: ProcRef::current(),
            owner,
            emulator: None,
            created_unix_ms: state::now_unix_ms(),
        };
        state::create(&files.state, &st)?;
        if names::all(&spec.name).iter().any(|n| sys::netns_exists(n)) {
            let _ = std::fs::remove_file(&files.state);
            return Err(NamedError::Exists {
                name: spec.name.clone(),
            });
        }
        match self.build_steps(spec, &files, &mut st) {
            Ok(report) => Ok(report),
            Err(e) => {
                let _ = self.down(&spec.name);
                Err(e)
            }
        }
    }

    fn build_steps(
        &self,
        spec: &LabSpec,
        files: &Files,
        st: &mut LabState,
    ) -> Result<LabReport, NamedError> {
        // The lab outlives this process: its `down` removes the namespaces (also when a
        // later step fails, see `build`).
        builder::create(&Layout::named(&spec.name), spec)?.keep();
        if spec.uses_emulator() {
            st.emulator = Some(self.start_emulator(&spec.name, files, st.owner.is_some())?);
            state::write(&files.state, st)?;
        }
        let mut report = readback::read(files, &spec.name, Some(st), Vec::new())?;
        verify(spec, &report)?;
        st.phase = Phase::Up;
        state::write(&files.state, st)?;
        report.phase = Some(Phase::Up);
        Ok(report)
    }

    /// Starts the lab's emulator; an `owned` lab's emulator gets SIGKILL when the owning
    /// thread (its parent) dies, so a killed study leaves no emulator behind.
    fn start_emulator(
        &self,
        name: &str,
        files: &Files,
        owned: bool,
    ) -> Result<EmulatorProc, NamedError> {
        let fail = |detail: String| NamedError::Emulator {
            name: name.to_string(),
            detail,
        };
        let _ = std::fs::remove_file(&files.socket);
        let log =
            wirebench_sys::safefile::create_log(&files.log).map_err(|source| NamedError::Io {
                what: format!("creating {}", files.log.display()),
                source,
            })?;
        let log2 = log.try_clone().map_err(|source| NamedError::Io {
            what: "duplicating the log descriptor".into(),
            source,
        })?;
        let mut cmd = Command::new(&self.emulator.program);
        cmd.args(&self.emulator.args)
            .arg(name)
            .env(STATE_DIR_ENV, &self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        if owned {
            wirebench_sys::process::kill_with_parent(&mut cmd);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| fail(format!("cannot start {}: {e}", sys::cmdline(&cmd))))?;
        let pid = child.id();
        let deadline = Instant::now() + EMULATOR_READY;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(fail(format!(
                    "exited ({status}) before it was ready: {}",
                    log_tail(files)
                )));
            }
            if super::emud::query(&files.socket, Duration::from_secs(1)).is_ok() {
                break;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "not ready after {EMULATOR_READY:?}: {}",
                    log_tail(files)
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let proc = ProcRef::of(pid);
        let argv = state::cmdline(pid);
        state::adopt(child);
        match (proc, argv) {
            (Some(proc), Some(argv)) => Ok(EmulatorProc { proc, argv }),
            _ => Err(fail(format!("process {pid} vanished: {}", log_tail(files)))),
        }
    }

    /// Reads lab `name` back from the kernel (see [`LabReport`]).
    pub fn show(&self, name: &str) -> Result<LabReport, NamedError> {
        super::validate_name(name)?;
        self.check_state_dir()?;
        let files = Files::new(&self.dir, name);
        let st = state::read(&files.state)?;
        if st.is_none() {
            return Err(self.not_ours(name));
        }
        let stale = stale_reasons(name, Ok(st.as_ref()));
        readback::read(&files, name, st.as_ref(), stale)
    }

    /// Removes lab `name`: stops its emulator (only if the recorded PID is still that
    /// process), deletes its namespaces and files. Also removes what is left of a
    /// half-built or stale lab. A lab without a state file is not wirebench's: refused
    /// ([`NamedError::Foreign`] if namespaces named like it exist).
    pub fn down(&self, name: &str) -> Result<DownReport, NamedError> {
        super::validate_name(name)?;
        self.check_state_dir()?;
        let files = Files::new(&self.dir, name);
        let had_state = files.state.exists();
        if !had_state {
            return Err(self.not_ours(name));
        }
        let st = state::read(&files.state).ok().flatten();
        let emulator_pid = st
            .as_ref()
            .and_then(|s| s.emulator.as_ref())
            .and_then(state::stop_emulator);
        let namespaces = builder::teardown(&names::all(name))?;
        files.remove_all();
        Ok(DownReport {
            name: name.to_string(),
            namespaces,
            emulator_pid,
            had_state,
        })
    }

    /// The error for a lab without a state file: [`NamedError::Foreign`] if namespaces
    /// named like its own exist, else [`NamedError::NotFound`].
    fn not_ours(&self, name: &str) -> NamedError {
        let namespaces: Vec<String> = names::all(name)
            .into_iter()
            .filter(|n| sys::netns_exists(n))
            .collect();
        if namespaces.is_empty() {
            NamedError::NotFound {
                name: name.to_string(),
            }
        } else {
            NamedError::Foreign {
                name: name.to_string(),
                namespaces,
                dir: self.dir.display().to_string(),
            }
        }
    }

    /// Removes every lab (see [`list`](Self::list)). Tries all; returns the first error.
    pub fn down_all(&self) -> Result<Vec<DownReport>, NamedError> {
        collect_downs(self.list().iter().map(|n| self.down(n)))
    }

    /// Labs that cannot work any more: the process that was building it is gone before it
    /// finished, its owner process is gone, its emulator process is gone (or is not the
    /// process recorded), a namespace is missing, or only namespaces are left.
    pub fn stale(&self) -> Vec<StaleLab> {
        self.list()
            .into_iter()
            .filter_map(|name| {
                let st = state::read(&Files::new(&self.dir, &name).state);
                let reasons = stale_reasons(
                    &name,
                    st.as_ref().map(Option::as_ref).map_err(|e| e.to_string()),
                );
                (!reasons.is_empty()).then_some(StaleLab { name, reasons })
            })
            .collect()
    }

    /// Removes every stale lab.
    pub fn down_stale(&self) -> Result<Vec<DownReport>, NamedError> {
        collect_downs(self.stale().iter().map(|s| self.down(&s.name)))
    }
}

fn collect_downs(
    results: impl Iterator<Item = Result<DownReport, NamedError>>,
) -> Result<Vec<DownReport>, NamedError> {
    let mut done = Vec::new();
    let mut first_err = None;
    for r in results {
        match r {
            Ok(d) => done.push(d),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    first_err.map_or(Ok(done), Err)
}

fn stale_reasons(name: &str, st: Result<Option<&LabState>, String>) -> Vec<String> {
    let mut why = Vec::new();
    let st = match st {
        Err(e) => {
            why.push(format!("unreadable state file: {e}"));
            return why;
        }
        Ok(None) => {
            why.push("namespaces without a state file".to_string());
            return why;
        }
        Ok(Some(st)) => st,
    };
    let building = st.phase == Phase::Building;
    if building && !st.creator.is_some_and(|c| c.alive()) {
        let pid = st.creator.map_or(0, |c| c.pid);
        why.push(format!(
            "the build by pid {pid} did not finish and that process is gone"
        ));
    }
    if let Some(o) = st.owner.filter(|o| !o.alive()) {
        why.push(format!("owner pid {} is gone", o.pid));
    }
    if st.spec.uses_emulator() {
        match &st.emulator {
            Some(e) if !e.alive() => why.push(format!("emulator pid {} is gone", e.proc.pid)),
            None if !building => why.push("no emulator recorded".to_string()),
            _ => {}
        }
    }
    if !building {
        let mut expect = vec![names::client(name), names::server(name)];
        if st.spec.uses_emulator() {
            expect.push(names::middle(name));
        }
        for ns in expect.iter().filter(|n| !sys::netns_exists(n)) {
            why.push(format!("namespace {ns} is missing"));
        }
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_reasons_follow_the_recorded_processes() {
        let me = ProcRef::current().unwrap();
        let gone = ProcRef {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        let mut st = LabState {
            version: STATE_VERSION,
            spec: LabSpec::new("t-nonexistent"),
            phase: Phase::Building,
            creator: Some(me),
            owner: None,
            emulator: None,
            created_unix_ms: 0,
        };
        assert!(
            stale_reasons("t-nonexistent", Ok(Some(&st))).is_empty(),
            "build in progress"
        );
        st.creator = Some(gone);
        let why = stale_reasons("t-nonexistent", Ok(Some(&st)));
        assert!(why[0].contains("did not finish"), "{why:?}");
        st.phase = Phase::Up;
        st.owner = Some(gone);
        st.spec.emulate = true;
        let why = stale_reasons("t-nonexistent", Ok(Some(&st))).join("; ");
        assert!(
            why.contains("owner pid") && why.contains("no emulator recorded"),
            "{why}"
        );
        assert!(
            why.contains("namespace wbl-t-nonexistent-m is missing"),
            "{why}"
        );
        st.emulator = Some(EmulatorProc {
            proc: me,
            argv: vec!["not-our-command-line".into()],
        });
        let why = stale_reasons("t-nonexistent", Ok(Some(&st))).join("; ");
        assert!(
            why.contains(&format!("emulator pid {} is gone", me.pid)),
            "{why}"
        );
        assert_eq!(
            stale_reasons("x", Ok(None)),
            ["namespaces without a state file"]
        );
    }
}
