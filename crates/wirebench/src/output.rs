//! Output: files written atomically and durably, or atomically only for files rewritten at
//! every point; and the printers' verbosity from `-v`/`-q`.

use std::path::Path;

use anyhow::Result;
use wirebench_report::print::Verbosity;

/// Write `bytes` to `path` atomically and durably
/// ([`wirebench_sys::safefile::write_atomically`]: a random `O_EXCL` temporary file, fsync,
/// rename, directory fsync; a planted link is replaced, never followed).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(wirebench_sys::safefile::write_atomically(path, bytes)?)
}

/// Like [`write_atomically`] without the two fsyncs, for files rewritten whole at every
/// point of a sweep or study whose records are durable elsewhere (a sweep's `sweep.json`
/// and `points.csv` between points, a study's `points.csv`): the rename is still atomic, so
/// a killed run leaves the old or the new file, never half of one; a power loss can at worst
/// leave an older copy. The fsyncs cost 5–15 ms each on this project's VMs, most of a sweep
/// point's overhead.
pub fn write_derived(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(wirebench_sys::safefile::write_derived(path, bytes)?)
}

/// The verbosity `-v` and `-q` ask for (clap refuses both).
pub fn verbosity(verbose: bool, quiet: bool) -> Verbosity {
    match (verbose, quiet) {
        (true, _) => Verbosity::Verbose,
        (false, true) => Verbosity::Quiet,
        (false, false) => Verbosity::Normal,
    }
}
