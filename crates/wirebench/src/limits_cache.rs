//! This machine's limits as `wirebench limits` cached them for this boot (see
//! [`crate::commands::limits`], which measures and writes them): where the cache is, and
//! finishing a result against it.

use std::path::{Path, PathBuf};

use wirebench_model::limits::LimitsResult;
use wirebench_model::result::RunResult;

/// Where the cache goes without [`STATE_DIR_ENV`].
pub const DEFAULT_STATE_DIR: &str = "/var/lib/wirebench";
/// Environment variable that overrides [`DEFAULT_STATE_DIR`].
pub const STATE_DIR_ENV: &str = "WIREBENCH_STATE_DIR";

/// The state directory: `$WIREBENCH_STATE_DIR`, else [`DEFAULT_STATE_DIR`].
pub fn state_dir_from_env() -> PathBuf {
    std::env::var_os(STATE_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

/// This boot's id, if it can be read and is a plain id (hex digits and dashes, as the
/// kernel writes it; so it can name a file).
pub fn this_boot_id() -> Option<String> {
    let id = wirebench_sys::host::read_sysctl("kernel.random.boot_id").ok()?;
    let plain =
        !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    plain.then_some(id)
}

/// The cache file of boot `boot_id` in `dir`.
pub fn cache_path(dir: &Path, boot_id: &str) -> PathBuf {
    dir.join(format!("limits-{boot_id}.json"))
}

/// Finishes a measured result against this machine's limits when they are cached for this
/// boot ([`wirebench_analysis::finish`]; the cache is read only for a result that needs it).
/// Single tests, tests under load, sweep points and study points all go through it.
pub fn finish(result: &mut RunResult) {
    if wirebench_analysis::finish::needs_limits(result) {
        let limits = cached_for_this_boot().map(|(_, l)| l);
        wirebench_analysis::finish::finish(result, limits.as_ref());
    }
}

/// The limits cached for this boot, with their file: `None` when there is no such file, or
/// it is not a limits document this build reads, or it names another boot.
pub fn cached_for_this_boot() -> Option<(PathBuf, LimitsResult)> {
    let boot = this_boot_id()?;
    let path = cache_path(&state_dir_from_env(), &boot);
    let text = std::fs::read_to_string(&path).ok()?;
    match LimitsResult::from_json(&text) {
        Ok(l) if l.boot_id.as_deref() == Some(boot.as_str()) => Some((path, l)),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!("ignoring {}: {e}", path.display());
            None
        }
    }
}
