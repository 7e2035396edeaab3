//! The test commands' arguments (`stream`, `rr`, `crr`, `udp` and their client flags), shared
//! by the test commands, `sweep` and `study`, the value parsers every command uses, and
//! [`TestLine`], which parses one test's command line (a sweep's or a study's point)
//! without the whole command tree.

use std::net::IpAddr;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// One test's command line (`wirebench stream ...`, `wirebench rr ...`): the test
/// subcommands of [`crate::cli::Cli`] alone, so that a sweep's or a study's points are
/// parsed by the same definitions without the whole command tree (a unit test in
/// [`crate::cli`] checks that the two agree).
#[derive(Debug, Parser)]
#[command(name = "wirebench", max_term_width = 100)]
pub struct TestLine {
    /// The test.
    #[command(subcommand)]
    pub test: TestCommand,
}

/// The test subcommands.
#[derive(Debug, Subcommand)]
pub enum TestCommand {
    /// TCP bulk-transfer test (like netperf TCP_STREAM / iperf3). Without -H, runs against an
    /// embedded server on loopback.
    Stream(StreamArgs),
    /// TCP request/response (netperf TCP_RR), or UDP with --udp (UDP_RR): transactions per
    /// second and round-trip latency percentiles.
    Rr(RrArgs),
    /// TCP connect/request/response/close, a new connection per transaction (netperf TCP_CRR).
    Crr(CrrArgs),
    /// UDP stream with exact loss, reordering, duplication and jitter accounting (iperf3 -u).
    Udp(UdpArgs),
}

/// clap's error as one line: its first line, joined with the lines that name the arguments
/// when it lists them ("the following required arguments were not provided: `<IDENTITY>`"),
/// without the usage and help lines.
pub fn first_line(s: &str) -> String {
    let mut lines = s
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"));
    let first = lines
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .to_string();
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        first
    } else {
        format!("{first} {}", rest.join(", "))
    }
}

/// `wirebench stream`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct StreamArgs {
    /// Options of every client command.
    #[command(flatten)]
    pub c: ClientArgs,
    /// Bytes per send/receive call (suffixes K, M, G are powers of 1024). Default 1M (fewer
    /// calls per byte: the path, not the call overhead, is measured), halved for many flows:
    /// on the epoll engine (above 32 connections, unpaced, copy paths) until one call per
    /// connection sums to 4 GiB (256K at -P 10000), otherwise until message size x
    /// connections fits the 512 MiB buffer bound (512K for -Z at -P 1000). iperf3's default
    /// is 128K: pass -l 128K to compare call for call.
    #[arg(short = 'l', long = "msg-size", value_parser = parse_size)]
    pub msg_size: Option<u64>,
    /// Bytes per send call at the sending end (netperf -m); overrides -l for the sender.
    #[arg(long, value_parser = parse_size)]
    pub send_size: Option<u64>,
    /// Bytes per receive call at the receiving end (netperf -M); overrides -l for the
    /// receiver. Without it or -l, a sender that does not copy (-Z, --send-path sendfile,
    /// splice, zerocopy, uring-zc) is received in 256K calls: the receiver's copy is then the
    /// bottleneck and a cache-sized buffer moves more.
    #[arg(long, value_parser = parse_size)]
    pub recv_size: Option<u64>,
    /// Server sends, client receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Set TCP_NODELAY on data connections.
    #[arg(short = 'N', long)]
    pub nodelay: bool,
    /// Stop after BYTES of payload per direction (K, M, G = 1024^n; like iperf3 -n), split
    /// over the flows; -t is then the upper bound. The figures cover the first byte to the
    /// last.
    #[arg(short = 'n', long = "bytes", value_name = "BYTES", value_parser = parse_size,
          conflicts_with = "blocks")]
    pub bytes: Option<u64>,
    /// Stop after COUNT send calls' worth of payload per direction (COUNT x the send size;
    /// like iperf3 -k).
    #[arg(short = 'k', long = "blocks", value_name = "COUNT", value_parser = parse_size)]
    pub blocks: Option<u64>,
    /// Pace each flow to RATE bits/s of payload (K/M/G = 10^3/10^6/10^9), like iperf3 -b.
    #[arg(short = 'b', long, value_parser = parse_rate)]
    pub rate: Option<u64>,
    /// How the sending end sends: copy (write), sendfile (from a memory file), splice
    /// (vmsplice + splice), zerocopy (MSG_ZEROCOPY), uring (io_uring SEND) or uring_zc
    /// (io_uring SEND_ZC). An end that cannot use it falls back to copy and warns.
    #[arg(long, value_enum, default_value_t = SendPathArg::Copy)]
    pub send_path: SendPathArg,
    /// Same as --send-path sendfile (iperf3 -Z).
    #[arg(short = 'Z', conflicts_with = "send_path")]
    pub sendfile: bool,
    /// How the receiving end receives: copy (read), discard (recv MSG_TRUNC, data never
    /// reaches the application), splice (to /dev/null, likewise), zerocopy
    /// (TCP_ZEROCOPY_RECEIVE) or uring (io_uring). Falls back to copy like --send-path.
    #[arg(long, value_enum, default_value_t = RecvPathArg::Copy)]
    pub recv_path: RecvPathArg,
    /// How each receiving flow waits while its socket is empty (copy, discard and splice
    /// paths): auto (the default: nap while the calls are at most 512 KiB and the socket's
    /// receive buffer at least 1.5 MiB, else block; an epoll worker naps the same way with
    /// the sum of its flows' buffers; the zerocopy and uring paths wait their own way),
    /// block (in the receive call, or epoll_wait), nap (zero-timeout poll, then up to 4
    /// sleeps of 20 us on the thread's own timer, then block: the sender's CPU then wakes
    /// nobody) or spin (zero-timeout polls for up to 50 us, then block; costs receiver
    /// CPU); nap and spin need a thread per flow. Reported per direction.
    #[arg(long, value_enum, default_value_t = RecvWaitArg::Auto)]
    pub recv_wait: RecvWaitArg,
    /// Check every received byte against the expected payload (not with --recv-path
    /// discard or splice, which never see the data).
    #[arg(long)]
    pub verify: bool,
    /// Run both ends on N epoll worker threads (neper's model: each worker owns an epoll
    /// set and every N-th flow; copy paths, unpaced). Default: a thread per flow up to 32
    /// flows, above that one worker per online CPU.
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// Pin each end's data threads (workers, or one thread per flow) round-robin over the
    /// CPUs that end may use. --affinity, where given, pins that end to one CPU instead.
    #[arg(long)]
    pub pin_threads: bool,
    /// Test against a stock iperf3 server (`iperf3 -s`) at -H, port 5201 unless -p: this end
    /// is measured as usual (its own intervals, TCP_INFO, CPU), the server's figures come
    /// from iperf3's results exchange and are shown beside them, reconciled.
    #[arg(long, requires = "host")]
    pub iperf3: bool,
    /// With --iperf3: while the server is busy with another test, try again up to N times,
    /// waiting 0.25 s, then twice as long each time (at most 4 s).
    #[arg(long, value_name = "N", requires = "iperf3")]
    pub retry: Option<u32>,
}

/// `--load-direction` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadDirArg {
    /// Client to server (the requests' direction).
    Forward,
    /// Server to client (the responses' direction).
    Reverse,
    /// Both at once (RRUL).
    Bidir,
}

/// `--send-path` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SendPathArg {
    /// write(2).
    Copy,
    /// sendfile(2) from a memory-backed file.
    Sendfile,
    /// vmsplice(2) + splice(2).
    Splice,
    /// send(MSG_ZEROCOPY).
    Zerocopy,
    /// io_uring SEND (copies, like write, without a system call per message).
    Uring,
    /// io_uring SEND_ZC from a registered buffer (Linux 6.0+).
    #[value(name = "uring_zc", alias = "uring-zc")]
    UringZc,
}

/// `--recv-wait` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecvWaitArg {
    /// Nap with a large receive buffer, else block.
    Auto,
    /// Block in the receive call.
    Block,
    /// Poll, nap on the thread's timer, then block.
    Nap,
    /// Poll without sleeping, then block.
    Spin,
}

/// `--recv-path` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecvPathArg {
    /// read(2).
    Copy,
    /// recv(MSG_TRUNC).
    Discard,
    /// splice(2) to /dev/null.
    Splice,
    /// TCP_ZEROCOPY_RECEIVE.
    Zerocopy,
    /// io_uring.
    Uring,
}

/// A `--busy-poll` value: `off`, or SO_BUSY_POLL in microseconds (0: spin without it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusyPollArg(pub Option<u32>);

/// Parse a `--busy-poll` value.
pub fn parse_busy_poll(s: &str) -> Result<BusyPollArg, String> {
    match s.trim() {
        "off" => Ok(BusyPollArg(None)),
        t => t
            .parse::<u32>()
            .map(|us| BusyPollArg(Some(us)))
            .map_err(|_| format!("'{s}' is neither 'off' nor a number of microseconds")),
    }
}

/// `wirebench rr`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct RrArgs {
    /// Options of every client command.
    #[command(flatten)]
    pub c: ClientArgs,
    /// Bytes per request and per response: a ping-pong of equal messages (NetPIPE's, the
    /// Trapeze latency figure); --request-size/--response-size override either.
    #[arg(short = 'l', long, value_parser = parse_size)]
    pub msg_size: Option<u64>,
    /// Bytes per request (K/M = 1024^n); default 1, with --udp 8 (the sequence number).
    #[arg(long, value_parser = parse_size)]
    pub request_size: Option<u64>,
    /// Bytes per response (K/M = 1024^n); default 1, with --udp 8.
    #[arg(long, value_parser = parse_size)]
    pub response_size: Option<u64>,
    /// Transactions in flight per flow (netperf's -b); TCP closed loop only.
    #[arg(long, default_value_t = 1)]
    pub burst: u32,
    /// Open loop: send requests on a fixed schedule of N transactions per second per flow and
    /// measure latency from each scheduled send time (no coordinated omission). TCP only.
    /// (-b is a rate in every command.)
    #[arg(short = 'b', long, value_name = "N")]
    pub rate: Option<u64>,
    /// Open loop: most requests outstanding per flow (default 1000).
    #[arg(long, requires = "rate")]
    pub max_outstanding: Option<u32>,
    /// UDP request/response (netperf UDP_RR): a datagram each way; a response not back within
    /// --udp-timeout counts as lost and the flow goes on.
    #[arg(long)]
    pub udp: bool,
    /// UDP: wait this many milliseconds for a response before counting it lost.
    #[arg(long, default_value_t = 100, requires = "udp")]
    pub udp_timeout: u64,
    /// Busy polling at both ends, to take the scheduler out of the round trip: the data
    /// sockets are non-blocking and each flow thread spins on them (yielding the CPU between
    /// attempts) instead of sleeping, and SO_BUSY_POLL is set to US microseconds (default 50;
    /// 0 leaves it unset; it helps only devices with NAPI busy polling). Both ends' CPU then
    /// counts the spinning. Compare with a run without it to see the wake-up cost.
    /// `--busy-poll off` (the default) is accepted too, so that it can be a sweep factor.
    #[arg(long, value_name = "US|off", num_args = 0..=1, default_missing_value = "50",
          value_parser = parse_busy_poll)]
    pub busy_poll: Option<BusyPollArg>,
    /// Latency under load (flent's RRUL idea): measure the test alone first, then again
    /// beside N stream flows per direction on the same path, and report the latency the
    /// load induced (0 = no load).
    #[arg(long, value_name = "N")]
    pub under_load: Option<u32>,
    /// The load's direction.
    #[arg(long, value_enum, default_value_t = LoadDirArg::Bidir, requires = "under_load")]
    pub load_direction: LoadDirArg,
    /// Pace each load flow to RATE bits/s (K/M/G = 10^3/10^6/10^9); default unpaced.
    #[arg(long, value_name = "RATE", value_parser = parse_rate, requires = "under_load")]
    pub load_rate: Option<u64>,
}

/// `wirebench crr`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct CrrArgs {
    /// Options of every client command.
    #[command(flatten)]
    pub c: ClientArgs,
    /// Bytes per request (K/M = 1024^n).
    #[arg(long, default_value = "1", value_parser = parse_size)]
    pub request_size: u64,
    /// Bytes per response (K/M = 1024^n).
    #[arg(long, default_value = "1", value_parser = parse_size)]
    pub response_size: u64,
    /// Close each connection with RST (SO_LINGER 0) instead of an orderly FIN exchange: no
    /// TIME_WAIT, but not what most applications do. The result says which close was used.
    #[arg(long)]
    pub abortive_close: bool,
}

/// `wirebench udp`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct UdpArgs {
    /// Options of every client command.
    #[command(flatten)]
    pub c: ClientArgs,
    /// Bytes per datagram (UDP payload, 24-byte header included; K = 1024).
    #[arg(short = 'l', long = "msg-size", default_value = "1400", value_parser = parse_size)]
    pub msg_size: u64,
    /// Rate per flow, bits/s of UDP payload (K/M/G = 10^3/10^6/10^9), paced at 1 ms or finer;
    /// 0 = unpaced (as fast as the sender can).
    #[arg(short = 'b', long, default_value = "1M", value_parser = parse_rate_or_zero)]
    pub rate: u64,
    /// Server sends, client receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// The server is a stock `iperf3 -s` (port 5201 unless -p): wirebench runs the test as
    /// an iperf3 UDP client (iperf3's connect datagram per stream and its datagram header),
    /// and shows the server's figures (received, lost, jitter; or what it sent, -R) beside
    /// its own, with each flow's datagrams reconciled.
    #[arg(long)]
    pub iperf3: bool,
    /// With --iperf3: while the server is busy with another test, try again up to N times,
    /// waiting 0.25 s, then twice as long each time (at most 4 s).
    #[arg(long, value_name = "N", requires = "iperf3")]
    pub retry: Option<u32>,
    /// With --iperf3: 64-bit sequence numbers in the datagrams (iperf3's
    /// --udp-counters-64bit; the header is 16 bytes instead of 12).
    #[arg(long, requires = "iperf3")]
    pub udp_counters_64bit: bool,
}

/// Options shared by every client command.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Server host name or address. Without it, an embedded server on loopback is used.
    /// (-c, iperf3's client flag, is accepted for -H.)
    #[arg(short = 'H', long, visible_short_alias = 'c')]
    pub host: Option<String>,
    /// Server port (default 5301); needs -H.
    #[arg(short, long, requires = "host")]
    pub port: Option<u16>,
    /// Run the test from the wirebench daemon at AGENT (port 5301 unless given) as the
    /// client, against -H (a third-party test): this process carries no data. It asks -H
    /// for a ticket, then the agent to run the test with it, authenticating to both with
    /// --auth; the agent needs `serve --allow-third-party`. Not with --iperf3.
    #[arg(long, value_name = "AGENT[:PORT]", requires = "host")]
    pub from: Option<String>,
    /// Measured duration in seconds (after warm-up); default 10. With `stream -n/-k`, the
    /// longest the test may run (default 300).
    #[arg(short = 't', long, value_parser = secs_between(0.0, MAX_FLAG_SECS))]
    pub duration: Option<f64>,
    /// Warm-up in seconds, excluded from every figure.
    #[arg(long, default_value_t = 0.0, value_parser = secs_between(0.0, MAX_FLAG_SECS))]
    pub warmup: f64,
    /// Live interval lines every N seconds (0.1 to the test's duration); 0 turns them off.
    /// Default: 1 on a terminal with human output, none otherwise.
    #[arg(short, long, value_name = "SECONDS", value_parser = secs_between(0.0, MAX_FLAG_SECS))]
    pub interval: Option<f64>,
    /// Parallel flows (per direction).
    #[arg(short = 'P', long, default_value_t = 1)]
    pub flows: u32,
    /// SO_SNDBUF/SO_RCVBUF on both ends (suffixes K, M, G = 1024^n); the effective sizes the
    /// kernel chose are reported.
    #[arg(short = 'w', long, value_parser = parse_size)]
    pub window: Option<u64>,
    /// TCP congestion control on every data connection (both ends), e.g. cubic.
    #[arg(long = "congestion", short = 'C')]
    pub congestion: Option<String>,
    /// Authenticate as IDENTITY (the key comes from --auth-key-file or WIREBENCH_AUTH_KEY).
    #[arg(long, value_name = "IDENTITY")]
    pub auth: Option<String>,
    /// File with the key: a bare hex key, or a key file with a line for IDENTITY.
    #[arg(long, value_name = "FILE", requires = "auth")]
    pub auth_key_file: Option<std::path::PathBuf>,
    /// Accept a --auth-key-file that group or others may read (refused otherwise).
    #[arg(long, requires = "auth_key_file")]
    pub insecure_key_file: bool,
    /// Use IPv4 only.
    #[arg(short = '4', conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6')]
    pub ipv6: bool,
    /// Pin data threads: LOCAL,REMOTE CPU numbers (either may be empty), e.g. 0,1 or ,1.
    #[arg(short = 'A', long, value_parser = parse_affinity)]
    pub affinity: Option<(Option<u32>, Option<u32>)>,
    /// Profile where each end's CPUs spend the measurement window (perf sampling of the
    /// CPUs the end uses: all online CPUs, or its --affinity CPU): a breakdown into copy,
    /// checksum, memory management, interrupts, driver, TCP, IP, socket/syscall, scheduler,
    /// locks, wirebench, the profiler itself, other and idle. Needs root or CAP_PERFMON (or
    /// perf_event_paranoid <= 0); the server profiles only with `serve --allow-profile`.
    #[arg(long)]
    pub profile: bool,
    /// Profiling frequency, samples per second per CPU (default 241: each sample interrupts
    /// the CPU, and 4000 cost 14-21 % of a CPU-bound stream on 2-vCPU VMs); implies --profile.
    /// Prefer a prime (241, 3989): a rate in step with the kernel's tick or with millisecond
    /// timers samples few phases of them, and the result says so.
    #[arg(long, value_name = "HZ")]
    pub profile_hz: Option<u32>,
    /// Repeat the test MIN..MAX times until the confidence target is met (e.g. 3,10).
    #[arg(long, value_parser = parse_pair_u32)]
    pub iterations: Option<(u32, u32)>,
    /// Confidence LEVEL,WIDTH: level 95 or 99, width in percent of the mean (default 99,5);
    /// needs --iterations.
    #[arg(long, value_parser = parse_confidence, requires = "iterations")]
    pub confidence: Option<(u32, f64)>,
    /// Print one JSON RunResult document on stdout (-J as in iperf3).
    #[arg(short = 'J', long, conflicts_with = "csv")]
    pub json: bool,
    /// Print newline-delimited JSON: one object per live interval, then one with the result
    /// (intervals every second unless -i says otherwise).
    #[arg(long, conflicts_with_all = ["csv", "json"])]
    pub json_stream: bool,
    /// Print CSV on stdout: a row per run and direction; with --intervals a row per
    /// interval, with --per-flow a row per flow.
    #[arg(long)]
    pub csv: bool,
    /// With --csv: a row per live interval (the time series) instead of per run.
    #[arg(long, requires = "csv", conflicts_with = "per_flow")]
    pub intervals: bool,
    /// Also write the result to FILE: JSON, or CSV with --csv (atomically: a reader sees all
    /// of it or none); `-` is stdout alone. Checked before the test starts.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Rates in this unit: k, m, g (kbit/s, Mbit/s, Gbit/s), K, M, G (kB/s, MB/s, GB/s);
    /// a / A chooses bits / bytes automatically (default a). Like iperf3's -f.
    #[arg(short = 'f', long = "format", value_name = "UNIT",
          value_parser = clap::builder::PossibleValuesParser::new(["a", "A", "k", "m", "g", "K", "M", "G"]))]
    pub rate_unit: Option<String>,
    /// A row per flow in the human output whatever the number of flows (default: above 16
    /// flows a direction, its slowest 5 and the spread); with --csv, a CSV row per flow.
    #[arg(long)]
    pub per_flow: bool,
    /// A title printed with the result and kept in its JSON (like iperf3's -T).
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Human output: everything (the per-direction notes, engines, each end's CPU
    /// breakdown, the verdict's evidence and suggestions, the footer defining the figures).
    #[arg(short = 'v', long, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Human output: only a summary line per test (per direction of a stream or UDP test)
    /// and errors; no live lines.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Prefix every live line with the wall-clock time (like iperf3's --timestamps).
    #[arg(long)]
    pub timestamps: bool,
    /// Bound on connecting to the server, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0,
          value_parser = secs_between(0.001, 3600.0))]
    pub connect_timeout: f64,
    /// Start every connection (and UDP socket) from this local address (like iperf3 -B).
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// Source port of the first data connection, the next flows the following ports (like
    /// iperf3 --cport).
    #[arg(long, value_name = "PORT")]
    pub cport: Option<u16>,
    /// IP type of service / traffic class of every data socket at both ends, e.g. 0x10 or 16
    /// (like iperf3 -S).
    #[arg(short = 'S', long, value_parser = parse_tos, conflicts_with = "dscp")]
    pub tos: Option<u8>,
    /// DSCP of every data socket (0-63, or a name: ef, af11..af43, cs0..cs7); sets the TOS
    /// byte's upper six bits.
    #[arg(long, value_parser = parse_dscp)]
    pub dscp: Option<u8>,
    /// Cap every data socket's pacing rate (SO_MAX_PACING_RATE) at RATE bits/s (K/M/G =
    /// 10^3/10^6/10^9), at both ends (like iperf3 --fq-rate).
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub fq_rate: Option<u64>,
    /// Set Don't Fragment on every data socket (path-MTU discovery always on).
    #[arg(long)]
    pub dont_fragment: bool,
    /// TCP maximum segment size on every data connection, bytes (TCP_MAXSEG; like iperf3 -M).
    #[arg(short = 'M', long = "set-mss", value_name = "BYTES")]
    pub mss: Option<u32>,
    /// TCP_NOTSENT_LOWAT on every data connection at both ends (suffixes K, M, G = 1024^n;
    /// like iperf2 --tcp-write-prefetch): a sender writes only while less than SIZE of its
    /// socket's queue is unsent. With many flows, e.g. 16K keeps the unsent data out of the
    /// kernel's memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub notsent_lowat: Option<u64>,
    /// Start every data buffer at both ends BYTES past a page boundary (0-4095; default 0,
    /// page-aligned). On some CPUs (AMD Zen 3) the kernel copies into a buffer that starts
    /// 1-31 bytes after the socket data's offset in its page about 20x slower; this shows it.
    #[arg(long, value_name = "BYTES")]
    pub buffer_offset: Option<u32>,
    /// Saving to the results history.
    #[command(flatten)]
    pub save: crate::history::SaveArgs,
}

/// Parse a TOS byte: decimal, `0x..` hex or `0..` octal (as iperf3 -S).
pub fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u8::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u8::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    v.map_err(|_| format!("'{s}' is not a TOS byte (0-255, e.g. 0x10)"))
}

/// Parse a DSCP: 0-63 or a standard name, as the TOS byte it sets (DSCP << 2).
pub fn parse_dscp(s: &str) -> Result<u8, String> {
    let t = s.trim().to_ascii_lowercase();
    let code: u8 = match t.as_str() {
        "ef" => 46,
        n if n.starts_with("cs") && n.len() == 3 => n[2..]
            .parse::<u8>()
            .ok()
            .filter(|c| *c <= 7)
            .map(|c| c * 8)
            .ok_or_else(|| format!("'{s}' is not a DSCP"))?,
        n if n.starts_with("af") && n.len() == 4 => {
            let (class, drop) = (n[2..3].parse::<u8>(), n[3..4].parse::<u8>());
            match (class, drop) {
                (Ok(c @ 1..=4), Ok(d @ 1..=3)) => c * 8 + d * 2,
                _ => return Err(format!("'{s}' is not a DSCP")),
            }
        }
        n => n
            .parse::<u8>()
            .ok()
            .filter(|c| *c <= 63)
            .ok_or_else(|| format!("'{s}' is not a DSCP (0-63 or ef, afXY, csN)"))?,
    };
    Ok(code << 2)
}

/// Parse seconds: a finite number, 0 or more (a negative one names its flag in clap's error).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err("seconds must be a finite number, 0 or more".into()),
        Err(_) => Err("not a number of seconds".into()),
    }
}

/// Parse a byte size: plain bytes or with a K/M/G suffix (1024-based), optional trailing B or iB.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (num, mult) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 1u64 << 10),
        Some('m') => (&body[..body.len() - 1], 1 << 20),
        Some('g') => (&body[..body.len() - 1], 1 << 30),
        _ => (body, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (examples: 1448, 64K, 1M)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// [`parse_rate`], or `0` (no rate: unpaced).
pub fn parse_rate_or_zero(s: &str) -> Result<u64, String> {
    if s.trim() == "0" {
        return Ok(0);
    }
    parse_rate(s)
}

/// Parse a rate in bits per second: plain, or with a k/M/G/T suffix (powers of 1000), an
/// optional trailing "bit/s" or "bps".
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let body = t
        .strip_suffix("bit/s")
        .or_else(|| t.strip_suffix("bps"))
        .unwrap_or(t);
    let (num, mult) = match body.chars().last() {
        Some('k' | 'K') => (&body[..body.len() - 1], 1e3),
        Some('m' | 'M') => (&body[..body.len() - 1], 1e6),
        Some('g' | 'G') => (&body[..body.len() - 1], 1e9),
        Some('t' | 'T') => (&body[..body.len() - 1], 1e12),
        _ => (body, 1.0),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a rate (examples: 100M, 2.5G, 64000)"))?;
    let v = n * mult;
    if !(v.is_finite() && (1.0..1e19).contains(&v)) {
        return Err(format!("'{s}' is not a usable rate"));
    }
    Ok(v.round() as u64)
}

/// Longest duration any time flag takes: a week, in seconds.
pub const MAX_FLAG_SECS: f64 = 604_800.0;

/// A value parser for a flag in seconds: a finite number from `min` to `max` (clap's error
/// names the flag; this says the range).
pub fn secs_between(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("not a number of seconds (range {min} s to {max} s)"))?;
        if !v.is_finite() || v < min || v > max {
            return Err(format!("must be a number of seconds from {min} to {max}"));
        }
        Ok(v)
    }
}

/// Parse `LOCAL,REMOTE` CPU numbers; either may be empty.
pub fn parse_affinity(s: &str) -> Result<(Option<u32>, Option<u32>), String> {
    let (a, b) = s.split_once(',').unwrap_or((s, ""));
    let p = |x: &str| -> Result<Option<u32>, String> {
        let x = x.trim();
        if x.is_empty() {
            Ok(None)
        } else {
            x.parse()
                .map(Some)
                .map_err(|_| format!("'{x}' is not a CPU number"))
        }
    };
    Ok((p(a)?, p(b)?))
}

/// Parse `MIN,MAX` (or a single N for N,N).
pub fn parse_pair_u32(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s.split_once(',').unwrap_or((s, s));
    let a: u32 = a
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not MIN,MAX"))?;
    let b: u32 = b
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not MIN,MAX"))?;
    if a == 0 || b < a || b > 1000 {
        return Err(format!("'{s}': need 1 <= MIN <= MAX <= 1000"));
    }
    Ok((a, b))
}

/// Parse `LEVEL,WIDTH` with LEVEL 95 or 99 and 0 < WIDTH <= 100 (percent of the mean).
pub fn parse_confidence(s: &str) -> Result<(u32, f64), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}' is not LEVEL,WIDTH (e.g. 99,5)"))?;
    let level: u32 = a
        .trim()
        .parse()
        .map_err(|_| format!("'{a}' is not 95 or 99"))?;
    if level != 95 && level != 99 {
        return Err(format!("confidence level {level}: use 95 or 99"));
    }
    let width: f64 = b
        .trim()
        .parse()
        .map_err(|_| format!("'{b}' is not a width in percent"))?;
    if !(width > 0.0 && width <= 100.0) {
        return Err(format!("confidence width {width}: use 0 < WIDTH <= 100"));
    }
    Ok((level, width))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1448").unwrap(), 1448);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("2MiB").unwrap(), 2 << 20);
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999999999G").is_err());
    }

    #[test]
    fn tos_and_dscp() {
        assert_eq!(parse_tos("0x10").unwrap(), 16);
        assert_eq!(parse_tos("16").unwrap(), 16);
        assert_eq!(parse_tos("020").unwrap(), 16);
        assert!(parse_tos("256").is_err());
        assert_eq!(parse_dscp("ef").unwrap(), 46 << 2);
        assert_eq!(parse_dscp("af41").unwrap(), 34 << 2);
        assert_eq!(parse_dscp("cs1").unwrap(), 8 << 2);
        assert_eq!(parse_dscp("10").unwrap(), 10 << 2);
        assert!(parse_dscp("64").is_err());
        assert!(parse_dscp("af51").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100M").unwrap(), 100_000_000);
        assert_eq!(parse_rate("2.5G").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate("64000").unwrap(), 64_000);
        assert_eq!(parse_rate("1Gbit/s").unwrap(), 1_000_000_000);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("-5M").is_err());
        assert!(parse_rate("1e30").is_err());
    }

    #[test]
    fn affinity_and_pairs() {
        assert_eq!(parse_affinity("0,1").unwrap(), (Some(0), Some(1)));
        assert_eq!(parse_affinity(",1").unwrap(), (None, Some(1)));
        assert_eq!(parse_affinity("1").unwrap(), (Some(1), None));
        assert!(parse_affinity("a,1").is_err());
        assert_eq!(parse_pair_u32("3,10").unwrap(), (3, 10));
        assert!(parse_pair_u32("5,3").is_err());
        assert!(parse_pair_u32("0,3").is_err());
        assert_eq!(parse_confidence("95,2.5").unwrap(), (95, 2.5));
        assert!(parse_confidence("90,5").is_err());
        assert!(parse_confidence("99,0").is_err());
    }
}
