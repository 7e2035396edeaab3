//! Reading key files (`serve --auth-keys`, the client's `--auth-key-file`): a regular file,
//! not readable by group or others (unless `--insecure-key-file`), at most
//! [`MAX_KEY_FILE_BYTES`] long.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Largest key file read: 1024 lines of a 64-character identity and a 64-digit key.
pub const MAX_KEY_FILE_BYTES: u64 = 1024 * 130;

/// The text of the key file at `path`, or why it is refused: not a regular file (a device
/// such as `/dev/zero` would be read without end), readable by group or others (a key others
/// can read is no secret; `insecure` accepts it with a warning), or longer than
/// [`MAX_KEY_FILE_BYTES`].
pub fn read_key_file(path: &Path, insecure: bool) -> Result<String, String> {
    let what = || format!("the key file {}", path.display());
    let file = wirebench_sys::safefile::open_read(path)
        .map_err(|e| format!("cannot read {}: {e}", what()))?;
    let m = file
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", what()))?;
    if !m.file_type().is_file() {
        return Err(format!("cannot read {}: not a regular file", what()));
    }
    if m.mode() & 0o077 != 0 {
        if !insecure {
            return Err(format!(
                "{} is readable or writable by group or others (mode {:03o}); chmod 600 it, \
                 or pass --insecure-key-file",
                what(),
                m.mode() & 0o777
            ));
        }
        tracing::warn!(
            "{} is readable by group or others (accepted: --insecure-key-file)",
            what()
        );
    }
    if m.len() > MAX_KEY_FILE_BYTES {
        return Err(format!(
            "{} is {} bytes; a key file is at most {MAX_KEY_FILE_BYTES} bytes",
            what(),
            m.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", what()))?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(format!(
            "{} grew past {MAX_KEY_FILE_BYTES} bytes while read",
            what()
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", what()))
}
