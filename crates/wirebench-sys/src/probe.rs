//! Primitives of the machine-limit probes (`wirebench limits`): a trivial system call to
//! time, and a futex to wait on and wake (the cross-CPU wake-up ping-pong).

use std::io;
use std::ptr;
use std::sync::atomic::AtomicU32;

/// Makes one trivial system call, `getppid(2)` (the kernel does next to no work; glibc does
/// not cache it), and returns its result so the caller can consume it.
#[inline]
pub fn trivial_syscall() -> i32 {
    // SAFETY: getppid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::getppid() }
}

/// The name of the system call [`trivial_syscall`] makes.
pub const TRIVIAL_SYSCALL: &str = "getppid";

/// Blocks the calling thread while `word` holds `expected` (`FUTEX_WAIT_PRIVATE`, no
/// timeout). Returns at once if it holds another value; may return spuriously (a signal),
/// so callers re-check the word in a loop.
///
/// # Errors
///
/// The `futex` error other than `EAGAIN` (the value differed) and `EINTR` (a signal), which
/// are normal returns.
pub fn futex_wait(word: &AtomicU32, expected: u32) -> io::Result<()> {
    // SAFETY: `word` is a live, aligned 32-bit atomic for the whole call (the reference
    // outlives it); FUTEX_WAIT only reads it, and a null timeout means no timeout. The
    // remaining arguments are ignored by FUTEX_WAIT.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ptr::null::<libc::timespec>(),
            ptr::null::<u32>(),
            0u32,
        )
    };
    if rc == -1 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
            _ => Err(err),
        };
    }
    Ok(())
}

/// Wakes at most `n` threads blocked in [`futex_wait`] on `word` (`FUTEX_WAKE_PRIVATE`);
/// returns how many were woken.
///
/// # Errors
///
/// The `futex` error.
pub fn futex_wake(word: &AtomicU32, n: u32) -> io::Result<usize> {
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    // SAFETY: `word` is a live, aligned 32-bit atomic for the whole call; FUTEX_WAKE does not
    // access its memory beyond using the address as a key. The remaining arguments are
    // ignored by FUTEX_WAKE.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
            ptr::null::<libc::timespec>(),
            ptr::null::<u32>(),
            0u32,
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(rc).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn syscall_returns_the_parent() {
        assert_eq!(
            trivial_syscall(),
            std::os::unix::process::parent_id() as i32
        );
    }

    #[test]
    fn wait_returns_when_the_value_differs() {
        let w = AtomicU32::new(1);
        futex_wait(&w, 0).unwrap();
        assert_eq!(futex_wake(&w, 1).unwrap(), 0);
    }

    #[test]
    fn wake_releases_a_waiter() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                futex_wait(&w2, 0).unwrap();
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        w.store(1, Ordering::Release);
        futex_wake(&w, 1).unwrap();
        t.join().unwrap();
    }
}
