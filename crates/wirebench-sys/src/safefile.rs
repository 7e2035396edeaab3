//! The one way wirebench writes files.
//!
//! wirebench often runs as root and writes into directories other users may write to
//! (`/tmp`, a shared results directory). Every writer goes through this module so that a
//! name planted in such a directory (a symbolic link, a hard link, a FIFO) never redirects
//! a write:
//!
//! * whole files ([`write_atomically`], [`write_derived`]) are written to a temporary file
//!   created with `O_CREAT|O_EXCL` (so never through an existing name) under a random name in
//!   the target's directory, then renamed over the target; a planted name at the target
//!   itself is replaced, not followed;
//! * the writability probe ([`probe_writable`]) creates and removes such a temporary file;
//! * files appended to or rewritten in place (records, logs: [`open_append`],
//!   [`create_log`]) are opened with `O_NOFOLLOW|O_NONBLOCK` and refused unless they are a
//!   regular file with one link, owned by the effective user;
//! * files that must not exist yet ([`create_new`]) are created with `O_CREAT|O_EXCL`;
//! * subdirectories made inside such a directory ([`create_own_dir`]) must be directories of
//!   the effective user's, not links to one.
//!
//! A test of the `wirebench` crate forbids `File::create`, `OpenOptions` and `fs::write`
//! outside this module (with a short list of reviewed exceptions such as `/proc/sys`).

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The directory a file `path` lives in (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn with_path(path: &Path, what: &str, e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        return io::Error::new(
            e.kind(),
            format!(
                "{what} {}: it is a symbolic link (refusing to follow it)",
                path.display()
            ),
        );
    }
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// A temporary file in `path`'s directory, created `O_EXCL` under a random name that starts
/// with `.NAME.` (so a listing shows what it was for), mode 0666 less the umask.
fn temporary_for(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a file path", path.display()),
        )
    })?;
    if path.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", path.display()),
        ));
    }
    let prefix = format!(".{}.", name.to_string_lossy());
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(parent_dir(path))
        .map_err(|e| with_path(parent_dir(path), "creating a temporary file in", e))
}

fn replace(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let mut tmp = temporary_for(path)?;
    tmp.write_all(bytes)
        .map_err(|e| with_path(tmp.path(), "writing", e))?;
    if durable {
        tmp.as_file()
            .sync_all()
            .map_err(|e| with_path(tmp.path(), "syncing", e))?;
    }
    // `persist` renames; on failure the temporary file is removed when `e` drops.
    tmp.persist(path)
        .map_err(|e| with_path(path, "renaming onto", e.error))?;
    if durable {
        if let Ok(d) = File::open(parent_dir(path)) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory, fsync, rename
/// and a directory fsync: a reader (or a later run) finds the old file or the new one,
/// never half of one, even after a power loss. A symbolic link at `path` is replaced by the
/// file, not followed.
///
/// # Errors
///
/// The failing step, naming the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, true)
}

/// Like [`write_atomically`] without the two fsyncs, for files rewritten whole many times
/// whose content is durable elsewhere (a sweep's `sweep.json` between points): the rename
/// is still atomic, a power loss can at worst leave an older copy.
///
/// # Errors
///
/// The failing step, naming the path.
pub fn write_derived(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, false)
}

/// Checks that [`write_atomically`] could write `path` now: it names a file (not a
/// directory) and its directory takes a new file (one is created `O_EXCL` and removed).
///
/// # Errors
///
/// Why it could not.
pub fn probe_writable(path: &Path) -> io::Result<()> {
    let tmp = temporary_for(path)?;
    tmp.close()
        .map_err(|e| with_path(path, "removing the probe for", e))
}

/// Creates `path`, which must not exist in any form (`O_CREAT|O_EXCL`, so a planted
/// symbolic link is an `AlreadyExists` error, not followed), for writing, with `mode`
/// (less the umask).
///
/// # Errors
///
/// `AlreadyExists` if the name exists, or the open error.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Refuses an opened file that is not a regular file with one link owned by the effective
/// user (another user's file, a hard link to someone's file, a FIFO or a device).
fn check_own_regular(path: &Path, file: &File) -> io::Result<()> {
    let m = file
        .metadata()
        .map_err(|e| with_path(path, "inspecting", e))?;
    let refuse = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("refusing to write {}: {why}", path.display()),
        ))
    };
    if !m.file_type().is_file() {
        return refuse("not a regular file");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if m.uid() != euid {
        return refuse(&format!(
            "owned by uid {}, not by this user (uid {euid})",
            m.uid()
        ));
    }
    if m.nlink() > 1 {
        return refuse(&format!(
            "it has {} hard links (it may be another file's name)",
            m.nlink()
        ));
    }
    Ok(())
}

fn open_checked(path: &Path, read: bool, append: bool) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(read)
        .write(!append)
        .append(append)
        .create(true)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| with_path(path, "opening", e))?;
    check_own_regular(path, &file)?;
    Ok(file)
}

/// Opens `path` for appending (created if missing; also readable when `read`), refusing a
/// symbolic link, anything but a regular file, a file with more than one link and a file
/// not owned by the effective user. For records files and logs that grow across runs.
///
/// # Errors
///
/// The open error or the refusal, naming the path.
pub fn open_append(path: &Path, read: bool) -> io::Result<File> {
    open_checked(path, read, true)
}

/// Opens `path` for writing from its start and truncates it (created if missing), with the
/// checks of [`open_append`]. For a log rewritten by every run (a lab's emulator log).
///
/// # Errors
///
/// The open error or the refusal, naming the path.
pub fn create_log(path: &Path) -> io::Result<File> {
    let file = open_checked(path, false, false)?;
    file.set_len(0)
        .map_err(|e| with_path(path, "truncating", e))?;
    Ok(file)
}

/// Creates the directory `path` (mode 0777 less the umask) unless it exists, then checks what
/// is there: a directory itself, not a symbolic link to one, owned by the effective user. For
/// a subdirectory wirebench makes inside a directory others may write to (a study's
/// `cells/`), where a planted link would send every file written below it elsewhere (the
/// `O_NOFOLLOW` of [`create_log`] guards only a path's last component).
///
/// # Errors
///
/// The creation error or the refusal, naming the path.
pub fn create_own_dir(path: &Path) -> io::Result<()> {
    match std::fs::create_dir(path) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
            return Err(with_path(path, "creating", e))
        }
        _ => {}
    }
    let m = std::fs::symlink_metadata(path).map_err(|e| with_path(path, "inspecting", e))?;
    let refuse = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("refusing to write below {}: {why}", path.display()),
        ))
    };
    if m.file_type().is_symlink() {
        return refuse("it is a symbolic link (refusing to follow it)");
    }
    if !m.is_dir() {
        return refuse("not a directory");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if m.uid() != euid {
        return refuse(&format!(
            "owned by uid {}, not by this user (uid {euid})",
            m.uid()
        ));
    }
    Ok(())
}

/// Opens `path` for reading without blocking on a FIFO (`O_NONBLOCK`), for files read
/// whole (a key file). The caller checks the kind of file it got.
///
/// # Errors
///
/// The open error.
pub fn open_read(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn own_dir_is_created_and_a_planted_link_to_a_directory_refused() {
        let d = dir();
        let sub = d.path().join("cells");
        create_own_dir(&sub).unwrap();
        assert!(sub.is_dir());
        create_own_dir(&sub).unwrap();
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = d.path().join("linked");
        symlink(&elsewhere, &link).unwrap();
        let e = create_own_dir(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let file = d.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = create_own_dir(&file).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[test]
    fn atomic_write_replaces_a_symlink_instead_of_following_it() {
        let d = dir();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = d.path().join("out");
        symlink(&victim, &out).unwrap();
        write_atomically(&out, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        // No temporary file left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn append_refuses_symlinks_fifos_and_hard_links() {
        let d = dir();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = d.path().join("link");
        symlink(&victim, &link).unwrap();
        let e = open_append(&link, false).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let hard = d.path().join("hard");
        std::fs::hard_link(&victim, &hard).unwrap();
        let e = create_log(&hard).unwrap_err();
        assert!(e.to_string().contains("hard links"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        let fifo = d.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        // With a reader on it, opening the FIFO for writing succeeds at the system call (no
        // reader: ENXIO first), so the type check itself is what refuses it.
        let _reader = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo)
                .unwrap()
        };
        let e = open_append(&fifo, false).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let mut f = open_append(&d.path().join("ok"), false).unwrap();
        f.write_all(b"x").unwrap();
    }

    #[test]
    fn create_new_does_not_follow_a_dangling_link() {
        let d = dir();
        let target = d.path().join("target");
        let link = d.path().join("link");
        symlink(&target, &link).unwrap();
        let e = create_new(&link, 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(!target.exists());
    }
}
