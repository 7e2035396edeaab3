//! Network namespaces: move the calling thread into a named namespace.
//!
//! Named namespaces are the bind mounts `ip netns add <name>` creates under
//! `/var/run/netns/<name>`. `setns(2)` with `CLONE_NEWNET` changes the network
//! namespace of the **calling thread only**; sockets it creates afterwards
//! belong to that namespace for their whole life, whichever thread later uses
//! them. [`run_in`] does the work on a fresh thread, so the caller's own
//! namespace never changes.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Directory where `ip netns` keeps named namespaces.
pub const NETNS_RUN_DIR: &str = "/var/run/netns";

/// The path of the named namespace `name` (`/var/run/netns/<name>`).
///
/// # Errors
///
/// `InvalidInput` if `name` is empty, `.`/`..`, or contains `/` or NUL.
pub fn netns_path(name: &str) -> io::Result<PathBuf> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid network namespace name {name:?}"),
        ));
    }
    Ok(Path::new(NETNS_RUN_DIR).join(name))
}

/// Moves the calling thread into the network namespace bound at `path`
/// (e.g. `/var/run/netns/x` or `/proc/<pid>/ns/net`).
///
/// Other threads of the process are not affected. Needs `CAP_SYS_ADMIN`.
///
/// # Errors
///
/// Opening `path` or `setns(2)` failed (`EINVAL` if it is not a network
/// namespace, `EPERM` without privilege).
pub fn enter_path(path: &Path) -> io::Result<()> {
    let file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", path.display())))?;
    // SAFETY: `file` is an open descriptor for the duration of the call;
    // `setns` only reads it and changes the calling thread's namespace, which
    // does not invalidate any memory of this process.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc == -1 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("setns({}): {e}", path.display()),
        ));
    }
    Ok(())
}

/// Moves the calling thread into a new, empty network namespace of its own
/// (`unshare(CLONE_NEWNET)`): only a loopback interface, down. The namespace
/// disappears when nothing (thread, process, socket, bind mount) refers to
/// it any more. Children spawned from this thread start in it. Needs
/// `CAP_SYS_ADMIN`.
///
/// # Errors
///
/// `unshare(2)` failed (`EPERM` without privilege).
pub fn enter_new() -> io::Result<()> {
    // SAFETY: plain syscall with a constant flag; it only changes the calling
    // thread's network namespace.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Moves the calling thread into the named network namespace `name`
/// (`/var/run/netns/<name>`, as created by `ip netns add`).
///
/// The change is permanent for this thread; use [`run_in`] to keep the
/// caller's namespace.
///
/// # Errors
///
/// See [`netns_path`] and [`enter_path`].
pub fn enter(name: &str) -> io::Result<()> {
    enter_path(&netns_path(name)?)
}

/// Runs `f` on a new thread that has entered the named network namespace
/// `name`, waits for it and returns its result. The calling thread's
/// namespace is untouched; sockets `f` creates (and may return) belong to
/// `name`.
///
/// # Errors
///
/// Entering the namespace failed, or `f` panicked (`Other`).
pub fn run_in<T, F>(name: &str, f: F) -> io::Result<T>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    let path = netns_path(name)?;
    std::thread::scope(|s| {
        s.spawn(move || -> io::Result<T> {
            enter_path(&path)?;
            Ok(f())
        })
        .join()
        .map_err(|_| io::Error::other(format!("thread in namespace {name:?} panicked")))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_names() {
        for bad in ["", ".", "..", "a/b", "a\0b"] {
            assert_eq!(
                netns_path(bad).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{bad:?}"
            );
        }
        assert_eq!(
            netns_path("wbt1x2-m").unwrap(),
            Path::new("/var/run/netns/wbt1x2-m")
        );
    }

    #[test]
    fn missing_namespace_is_an_error() {
        let e = enter("wirebench-no-such-namespace-xyz").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn own_namespace_round_trip() {
        // Entering our own namespace needs CAP_SYS_ADMIN; skip otherwise.
        let r = run_in_path_for_test(Path::new("/proc/self/ns/net"));
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                crate::require::capability("netns", false, &e.to_string());
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn run_in_path_for_test(p: &Path) -> io::Result<()> {
        let p = p.to_path_buf();
        std::thread::spawn(move || enter_path(&p))
            .join()
            .map_err(|_| io::Error::other("panicked"))?
    }
}
