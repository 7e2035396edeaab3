//! Running a child that stands in for this process (`lab exec`): the signals that would end
//! this process are passed on to the child, and this process then exits as the child did.

use std::io;
use std::process::{Command, ExitStatus};

use rustix::process::{kill_process, Pid, Signal};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithRawSiginfo;
use signal_hook::iterator::SignalsInfo;

/// The signals passed on to the child.
pub const FORWARDED: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// Spawns `cmd` and waits for it. While it runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to
/// this process (by `kill`, a supervisor, a shell's job control) are sent on to the child
/// instead of ending this process; those the kernel raised from the terminal (Ctrl-C,
/// Ctrl-\, a hang-up) are not, because the child, in the terminal's foreground process
/// group with this process, receives them itself. The child is also killed if this
/// process dies without passing anything on (SIGKILL): it gets SIGKILL with its parent.
pub fn spawn_and_wait(cmd: &mut Command) -> io::Result<ExitStatus> {
    let mut signals = SignalsInfo::<WithRawSiginfo>::new(FORWARDED)?;
    wirebench_sys::process::kill_with_parent(cmd);
    let mut child = cmd.spawn()?;
    let pid = Pid::from_raw(child.id() as i32);
    let handle = signals.handle();
    let forwarder = std::thread::spawn(move || {
        for info in signals.forever() {
            // The terminal's signals come from the kernel (SI_KERNEL); kill(2) and
            // sigqueue(3) set other codes.
            if info.si_code == libc::SI_KERNEL {
                continue;
            }
            if let (Some(pid), Some(sig)) = (pid, Signal::from_named_raw(info.si_signo)) {
                let _ = kill_process(pid, sig);
            }
        }
    });
    let status = child.wait();
    handle.close();
    let _ = forwarder.join();
    status
}

/// The exit code that stands for `status`: the child's code, or 128 + the signal that
/// ended it (as shells report it).
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
