//! Running the tools (`ip`, `tc`, `ethtool`) for a named lab: missing tools are named,
//! `ip -batch` failures are traced back to the setting of the failing line, and commands
//! that must run inside a namespace are spawned from a thread that entered it (cheaper than
//! `ip netns exec`, which also remounts `/sys`).

use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::NamedError;

/// One line of an `ip -batch` script and the user setting it applies, if any, so that a
/// refusal names the setting.
#[derive(Debug, Clone)]
pub(crate) struct BatchLine {
    pub(crate) line: String,
    pub(crate) setting: Option<(String, String)>,
}

impl BatchLine {
    pub(crate) fn plain(line: impl Into<String>) -> Self {
        BatchLine {
            line: line.into(),
            setting: None,
        }
    }

    pub(crate) fn for_setting(line: impl Into<String>, setting: &str, value: &str) -> Self {
        BatchLine {
            line: line.into(),
            setting: Some((setting.to_string(), value.to_string())),
        }
    }
}

/// Renders a command line for messages.
pub(crate) fn cmdline(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `cmd` (stdin from `input`) and returns its output whatever the exit status; a
/// program that cannot be found is [`NamedError::MissingTool`].
pub(crate) fn output(cmd: &mut Command, input: Option<&str>) -> Result<Output, NamedError> {
    let line = cmdline(cmd);
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            NamedError::MissingTool { tool: program }
        } else {
            NamedError::Io {
                what: format!("starting {line}"),
                source,
            }
        }
    })?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .map_err(|source| NamedError::Io {
                what: format!("writing to {line}"),
                source,
            })?;
    }
    child.wait_with_output().map_err(|source| NamedError::Io {
        what: format!("waiting for {line}"),
        source,
    })
}

/// Runs `cmd`; a non-zero exit is [`NamedError::Command`] with its stderr. Returns stdout.
pub(crate) fn run(cmd: &mut Command) -> Result<String, NamedError> {
    let out = output(cmd, None)?;
    if !out.status.success() {
        return Err(NamedError::Command {
            cmd: cmdline(cmd),
            stderr: stderr_text(&out),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn stderr_text(out: &Output) -> String {
    let e = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if e.is_empty() {
        format!("exit status {}", out.status)
    } else {
        e.lines().collect::<Vec<_>>().join("; ")
    }
}

/// `ip [-n ns] [extra...] -batch -` with `lines`, stopping at the first failing line. A
/// failing line that carries a setting is [`NamedError::Refused`] naming it.
pub(crate) fn ip_batch(
    ns: Option<&str>,
    extra: &[&str],
    lines: &[BatchLine],
) -> Result<String, NamedError> {
    if lines.is_empty() {
        return Ok(String::new());
    }
    let mut cmd = Command::new("ip");
    if let Some(ns) = ns {
        cmd.args(["-n", ns]);
    }
    cmd.args(extra).args(["-batch", "-"]);
    let script: String = lines.iter().map(|l| format!("{}\n", l.line)).collect();
    let out = output(&mut cmd, Some(&script))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    // iproute2 ends with "Command failed -:<line number>" (1-based).
    let failed = stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Command failed -:"))
        .filter_map(|n| n.trim().parse::<usize>().ok())
        .next_back();
    let detail = stderr
        .lines()
        .filter(|l| !l.trim().starts_with("Command failed"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let at = |ns: Option<&str>| ns.map(|n| format!(" in {n}")).unwrap_or_default();
    match failed.and_then(|n| lines.get(n.wrapping_sub(1))) {
        Some(BatchLine {
            setting: Some((setting, value)),
            ..
        }) => Err(NamedError::Refused {
            setting: setting.clone(),
            value: value.clone(),
            detail,
        }),
        Some(l) => Err(NamedError::Command {
            cmd: format!("ip{} {}", at(ns), l.line),
            stderr: detail,
        }),
        None => Err(NamedError::Command {
            cmd: format!("ip{} -batch", at(ns)),
            stderr: stderr_text(&out),
        }),
    }
}

/// Runs `f` on a thread that entered namespace `ns`; commands it spawns run there too.
pub(crate) fn in_ns<T: Send>(
    ns: &str,
    f: impl FnOnce() -> Result<T, NamedError> + Send,
) -> Result<T, NamedError> {
    wirebench_sys::netns::run_in(ns, f).map_err(|source| NamedError::Io {
        what: format!("entering namespace {ns}"),
        source,
    })?
}

/// Reads a file of `/proc/sys` (call inside the namespace), trimmed.
pub(crate) fn read_proc(path: &str) -> Result<String, NamedError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|source| NamedError::Io {
            what: format!("reading {path}"),
            source,
        })
}

/// Writes a file of `/proc/sys` (call inside the namespace).
pub(crate) fn write_proc(path: &str, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
}

/// Whether the named namespace exists (its bind mount under `/var/run/netns`).
pub(crate) fn netns_exists(name: &str) -> bool {
    Path::new(wirebench_sys::netns::NETNS_RUN_DIR)
        .join(name)
        .exists()
}

/// Names of all named namespaces.
pub(crate) fn netns_list() -> Vec<String> {
    std::fs::read_dir(wirebench_sys::netns::NETNS_RUN_DIR)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tool_is_named() {
        let e = run(&mut Command::new("wirebench-no-such-tool-xyz")).unwrap_err();
        assert!(
            matches!(&e, NamedError::MissingTool { tool } if tool == "wirebench-no-such-tool-xyz"),
            "{e}"
        );
    }

    #[test]
    fn failing_command_reports_stderr() {
        let e = run(Command::new("sh").args(["-c", "echo oops >&2; exit 3"])).unwrap_err();
        assert!(e.to_string().contains("oops"), "{e}");
    }
}
