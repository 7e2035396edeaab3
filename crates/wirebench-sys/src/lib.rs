//! Thin, safe wrappers around the Linux system interfaces wirebench needs.
//!
//! This is the only crate of the wirebench workspace that is allowed to
//! contain `unsafe` code. Every `unsafe` block carries a `// SAFETY:` comment,
//! and every public function is safe to call. Errors are reported as
//! [`std::io::Error`], except the sampler's typed [`perf::PerfError`].
//!
//! Modules:
//!
//! * [`tcp`]: `TCP_INFO`, `TCP_CONGESTION` and path MTU of connected sockets.
//! * [`thread`]: CPU affinity, thread ids and per-thread / per-process CPU time.
//! * [`process`]: process-wide settings (`SIGPIPE`, `RLIMIT_NOFILE`).
//! * [`netif`]: network interface information (offloads, MTU, address lookup).
//! * [`netns`]: entering network namespaces (named, or a new one) on the current thread.
//! * [`packet`]: `AF_PACKET` raw sockets bound to one interface (frames in and out).
//! * [`host`]: host information (kernel release, sysctls, CPU model, `/proc/stat`).
//! * [`ipopt`]: `SO_MAX_PACING_RATE` and Don't Fragment.
//! * [`udp`]: UDP drop counters (`SO_RXQ_OVFL`, `/proc/net/udp` drops, `/proc/net/snmp`).
//! * [`perf`]: a system-wide sampling profiler (`perf_event_open`, one event and ring per CPU).
//! * [`datapath`]: fast TCP data paths (sendfile, splice, `MSG_ZEROCOPY`, `TCP_ZEROCOPY_RECEIVE`, io_uring).
//! * [`mem`]: placed buffers (memory at a chosen offset from a page boundary) for every data path.
//! * [`probe`]: the machine-limit probes' primitives (a trivial system call, futex wait/wake).
//! * [`safefile`]: the one way files are written (no planted name redirects a write).

#[cfg(not(target_os = "linux"))]
compile_error!("wirebench-sys supports Linux only");

pub mod datapath;
pub mod host;
pub mod ipopt;
pub mod mem;
pub mod netif;
pub mod netns;
pub mod packet;
pub mod perf;
pub mod probe;
pub mod process;
pub mod require;
pub mod safefile;
pub mod tcp;
pub mod thread;
pub mod udp;

mod sockopt;
