//! Process-wide settings: `SIGPIPE` disposition, the open-file limit and the allocator's
//! large-block policy.

use std::io;

/// Sets the disposition of `SIGPIPE` to "ignore", so writes to a closed
/// socket fail with `EPIPE` instead of killing the process.
///
/// # Errors
///
/// Returns the `sigaction` error.
pub fn ignore_sigpipe() -> io::Result<()> {
    // SAFETY: `sigaction` is a plain C struct; all-zero is a valid value
    // (empty mask, no flags) before we set the handler.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = libc::SIG_IGN;
    // SAFETY: `sa` is fully initialised and `SIG_IGN` installs no Rust code
    // as a handler; a null old-action pointer is allowed.
    let rc = unsafe { libc::sigaction(libc::SIGPIPE, &sa, std::ptr::null_mut()) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Fixes glibc malloc's mmap threshold at `bytes` (`mallopt(M_MMAP_THRESHOLD)`), which also
/// turns off its dynamic raising: every allocation of at least `bytes` is then its own
/// mapping, returned to the kernel when freed. A long-running daemon that allocates
/// megabyte-sized buffers per test otherwise keeps them resident in per-thread arenas after
/// the tests end. Returns false if the C library refused (or is not glibc).
pub fn set_malloc_mmap_threshold(bytes: usize) -> bool {
    #[cfg(target_env = "gnu")]
    {
        let Ok(v) = libc::c_int::try_from(bytes) else {
            return false;
        };
        // SAFETY: `mallopt` only changes allocator parameters; M_MMAP_THRESHOLD takes any
        // int and the call has no memory-safety preconditions.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, v) == 1 }
    }
    #[cfg(not(target_env = "gnu"))]
    {
        let _ = bytes;
        false
    }
}

/// Reads `RLIMIT_NOFILE` as `(soft, hard)`.
fn get_nofile() -> io::Result<(u64, u64)> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid, writable `rlimit`.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok((rlim_to_u64(rl.rlim_cur), rlim_to_u64(rl.rlim_max)))
}

/// Converts an `rlim_t` (which is `u64` or `u32` depending on the target),
/// mapping `RLIM_INFINITY` to `u64::MAX`.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn rlim_to_u64(v: libc::rlim_t) -> u64 {
    if v == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        u64::from(v)
    }
}

/// Raises the soft `RLIMIT_NOFILE` to `min(want, hard limit)` and returns
/// the resulting soft limit. Never lowers the limit: if the current soft
/// limit is already at least that value it is returned unchanged.
///
/// When the hard limit is unlimited, the target is also capped at
/// `fs.nr_open`, the kernel's absolute maximum. When `want` exceeds a finite hard limit, the
/// hard limit is raised too if the process may (CAP_SYS_RESOURCE), up to `fs.nr_open`;
/// otherwise the soft limit goes up to the hard one.
///
/// # Errors
///
/// Returns the `getrlimit` / `setrlimit` error.
pub fn raise_nofile_limit(want: u64) -> io::Result<u64> {
    let (soft, hard) = get_nofile()?;
    if want > hard && hard != u64::MAX {
        // With CAP_SYS_RESOURCE the hard limit itself may be raised, up to `fs.nr_open`.
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(hard);
        let both: libc::rlim_t = want.min(nr_open);
        if both > hard {
            let rl = libc::rlimit {
                rlim_cur: both,
                rlim_max: both,
            };
            // SAFETY: `rl` is a valid, initialised `rlimit` that the kernel reads; without the
            // capability the call fails with EPERM and changes nothing.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) } == 0 {
                return Ok(get_nofile()?.0);
            }
        }
    }
    let mut target = want.min(hard);
    if target > soft {
        if let Some(nr_open) = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            target = target.min(nr_open);
        }
    }
    if target <= soft {
        return Ok(soft);
    }
    // `target` <= a finite hard limit or <= nr_open, so it fits `rlim_t`.
    let new_cur = libc::rlim_t::try_from(target).unwrap_or(libc::RLIM_INFINITY);
    let rl = libc::rlimit {
        rlim_cur: new_cur,
        rlim_max: if hard == u64::MAX {
            libc::RLIM_INFINITY
        } else {
            libc::rlim_t::try_from(hard).unwrap_or(libc::RLIM_INFINITY)
        },
    };
    // SAFETY: `rl` is a valid, initialised `rlimit` that the kernel reads.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(get_nofile()?.0)
}

/// Makes the child that `cmd` spawns receive SIGKILL when the thread that spawns it exits
/// (`PR_SET_PDEATHSIG`), so a helper process (a study's daemon) cannot outlive a killed
/// parent. The setting survives `execve` of ordinary programs (also through `ip netns
/// exec`, which execs in place). Spawn from a thread that lives as long as the child
/// should: the signal follows the spawning *thread*.
pub fn kill_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: `getpid` is async-signal-safe.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only calls `prctl`,
    // `getppid` and `_exit`, which are async-signal-safe; it allocates nothing and takes no
    // locks.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would signal us.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigpipe_ignored() {
        ignore_sigpipe().unwrap();
        ignore_sigpipe().unwrap();
    }

    #[test]
    fn nofile_never_lowered() {
        let (old, hard) = get_nofile().unwrap();
        assert_eq!(raise_nofile_limit(0).unwrap(), old);
        let got = raise_nofile_limit(old.saturating_add(1)).unwrap();
        assert!(got >= old);
        assert!(got <= hard);
        let got2 = raise_nofile_limit(u64::MAX).unwrap();
        assert!(got2 >= got);
        assert_eq!(get_nofile().unwrap().0, got2);
    }
}
