//! The data threads of a run: starting them pinned, registering their thread ids for the CPU
//! snapshots, and keeping the CPU time of the ones that already exited.

use std::io;
use std::sync::{mpsc, Mutex};
use std::thread;

use wirebench_model::warning::{DataThread, OsError, Warning};
use wirebench_sys::thread::CpuTimes;

use crate::cpu::CpuSnapshot;

/// The CPU time each data thread of a run left behind as it exited, by thread slot.
pub(crate) type FinalCpu = [Mutex<Option<CpuTimes>>];

/// Run `f` as data thread `slot`: pin it to `cpu` (if set), register its thread id on
/// `tid_tx` (then drop the sender: [`DataThreads::collect`] waits for every sender to go),
/// and leave its CPU time in `final_cpu[slot]` as it finishes, since its `/proc` entry goes
/// with it. Returns `f`'s result and, if pinning failed, why.
pub(crate) fn account_thread<R>(
    final_cpu: &FinalCpu,
    slot: usize,
    tid_tx: mpsc::Sender<(usize, i32)>,
    cpu: Option<usize>,
    f: impl FnOnce() -> R,
) -> (R, Option<io::Error>) {
    let pin_err = cpu.and_then(|c| wirebench_sys::thread::pin_current_thread(c).err());
    let tid = wirebench_sys::thread::current_thread_id();
    let _ = tid_tx.send((slot, tid));
    drop(tid_tx);
    let r = f();
    if let Ok(t) = wirebench_sys::thread::thread_cpu_times(tid) {
        if let Some(Ok(mut s)) = final_cpu.get(slot).map(|m| m.lock()) {
            *s = Some(t);
        }
    }
    (r, pin_err)
}

/// Start data thread `slot`, named `name`, in `scope`: it runs `f` under [`account_thread`]
/// and hands back `f`'s result and, if pinning failed, why.
pub(crate) fn spawn_data<'scope, R, F>(
    scope: &'scope thread::Scope<'scope, '_>,
    name: String,
    final_cpu: &'scope FinalCpu,
    slot: usize,
    tid_tx: mpsc::Sender<(usize, i32)>,
    cpu: Option<usize>,
    f: F,
) -> io::Result<thread::ScopedJoinHandle<'scope, (R, Option<io::Error>)>>
where
    F: FnOnce() -> R + Send + 'scope,
    R: Send + 'scope,
{
    thread::Builder::new()
        .name(name)
        .spawn_scoped(scope, move || {
            account_thread(final_cpu, slot, tid_tx, cpu, f)
        })
}

/// The handle of a started thread; if it could not be started, `None` and a
/// [`Warning::ThreadStartFailed`] for `thread`.
pub(crate) fn started<H>(
    h: io::Result<H>,
    thread: DataThread,
    warnings: &mut Vec<Warning>,
) -> Option<H> {
    h.map_err(|e| {
        warnings.push(Warning::ThreadStartFailed {
            thread,
            error: OsError::from(&e),
        })
    })
    .ok()
}

/// A run's data threads, for its CPU snapshots: their thread ids and what they left behind.
pub(crate) struct DataThreads<'a> {
    /// Thread slot of each entry of `tids`.
    slots: Vec<usize>,
    /// Thread ids, ordered by slot.
    tids: Vec<i32>,
    final_cpu: &'a FinalCpu,
}

impl<'a> DataThreads<'a> {
    /// The threads registered on `rx` by [`account_thread`]. Drops `tx`, the caller's own
    /// sender, then waits until every data thread has registered (dropped its sender).
    pub(crate) fn collect(
        tx: mpsc::Sender<(usize, i32)>,
        rx: &mpsc::Receiver<(usize, i32)>,
        final_cpu: &'a FinalCpu,
    ) -> Self {
        drop(tx);
        let mut tids: Vec<(usize, i32)> = rx.iter().collect();
        tids.sort_unstable();
        let (slots, tids) = tids.into_iter().unzip();
        DataThreads {
            slots,
            tids,
            final_cpu,
        }
    }

    /// A CPU snapshot now, labelled `at_ns`.
    pub(crate) fn snapshot(&self, at_ns: u64) -> CpuSnapshot {
        CpuSnapshot::take(at_ns, &self.tids, &|i| {
            let slot = *self.slots.get(i)?;
            *self.final_cpu.get(slot)?.lock().ok()?
        })
    }
}
