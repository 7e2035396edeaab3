# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_wirebench_global_optspecs
    string join \n h/help V/version
end

function __fish_wirebench_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_wirebench_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_wirebench_using_subcommand
    set -l cmd (__fish_wirebench_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c wirebench -n "__fish_wirebench_needs_command" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_needs_command" -s V -l version -d 'Print version'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "serve" -d 'Run the daemon that clients test against'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "stream" -d 'TCP bulk-transfer test (like netperf TCP_STREAM / iperf3). Without -H, runs against an embedded server on loopback'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "rr" -d 'TCP request/response (netperf TCP_RR), or UDP with --udp (UDP_RR): transactions per second and round-trip latency percentiles'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "crr" -d 'TCP connect/request/response/close, a new connection per transaction (netperf TCP_CRR)'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "udp" -d 'UDP stream with exact loss, reordering, duplication and jitter accounting (iperf3 -u)'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "keygen" -d 'Print a new `IDENTITY KEY` line for a `serve --auth-keys` file (32 random bytes, hex)'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "lab" -d 'A named testbed of network namespaces (client and server hosts joined by a veth pair, optionally through the link emulator): up, show, exec, down'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "study" -d 'Tests over testbed cells (MTU, offloads, rate, delay/loss, congestion control, sysctls, CPU placement) built on this machine from a study file: run, show'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "mesh" -d 'Tests between many hosts\' daemons (full mesh, star, incast, ring or pairs), never two throughput tests on one host at once; heatmaps per ordered pair'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "plot" -d 'Draw a result (a test\'s or a sweep\'s JSON, or a sweep\'s -o directory) as SVG'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "report" -d 'Write a result as one self-contained HTML page (inline SVG and CSS, opens offline)'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "limits" -d 'This machine\'s physical limits in a few seconds: memory copy and checksum bandwidth per buffer size, system call cost, wake-up latency, how fast bytes cross between two CPUs, the loopback TCP ceiling. Cached per boot; stream results are compared with them'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "history" -d 'The results history (every test is saved to a local database unless --no-save): list, show, export, delete, prune, import, compare, regress'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "compare" -d 'Compare result files (A.json B.json, or sets split by `vs`) figure by figure, with statistics: the change, its confidence interval, and whether it is real'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "completions" -d 'Print a shell completion script on stdout, e.g. `wirebench completions bash > /usr/share/bash-completion/completions/wirebench`'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "sweep" -d 'A test over a grid of factor values, each point a complete result, the curves analysed (saturation, n½, dips, Hockney fit, load knee)'
complete -c wirebench -n "__fish_wirebench_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l bind -d 'Address to listen on. Anything but loopback needs --auth-keys (or, explicitly, --allow-unauthenticated)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l auth-keys -d 'Require HMAC challenge-response authentication with the keys in FILE (`IDENTITY HEX-KEY` per line; see `wirebench keygen`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l identity -d 'This server\'s identity, covered by the clients\' MACs (default: the host name)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-rate -d 'Largest aggregate payload rate of one test, bits/s (K/M/G = 10^3/10^6/10^9). Tests must then ask for a rate, and a test whose data arrives faster is aborted' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-connections -d 'Connections handled at once (any kind, all sources)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-conns-per-source -d 'Connections from one source address at once (default: 2 x max-flows + 16)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-handshakes -d 'Connections still in their handshake; past this the oldest is closed' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l handshake-timeout -d 'Absolute deadline for a connection\'s handshake, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l idle-timeout -d 'While a test runs: a client silent for this long is gone, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l results-timeout -d 'After the server\'s engine finished: how long to wait for the client\'s results, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l records -d 'Append a JSON line per test served (completed, aborted or failed) to FILE' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l records-max-size -d 'Rotate the records file to FILE.1 before it passes this size (K/M/G = 1024^n)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l db -d 'Also save every test record to this results history database (SQLite; created if needed), as `history import` of the records file would, marked as from the daemon: `wirebench history list --db PATH` reads it. A record the database cannot take is logged; the records file keeps it' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l metrics -d 'Serve OpenMetrics (Prometheus) text at http://ADDR/metrics: the last result per peer, workload and direction (throughput, round-trip percentiles, transactions/s, loss, retransmits, CPU) and the daemon\'s health (tests, refusals by reason, connections, descriptors, memory). ADDR is IP:PORT, e.g. 127.0.0.1:9464' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -s p -l port -d 'TCP port' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-tests -d 'Tests allowed to run at once; more get an explicit busy answer' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-tests-per-peer -d 'Tests one peer (its identity, or its source address without authentication) may run at once; default 1 when --max-tests is above 1, so one peer cannot hold every slot' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-flows -d 'Largest number of flows per direction accepted' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-duration -d 'Longest test accepted, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-profiles -d 'Profiles taken at once (each samples every CPU); a test beyond runs unprofiled here' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l max-profile-hz -d 'Highest sampling frequency a client\'s --profile-hz may ask for, Hz per CPU (a higher request is sampled at this frequency; the report says which)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l pidfile -d 'Write the daemon\'s PID to FILE while it runs (removed at exit)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l iperf3-port -d 'TCP port of the iperf3 frontend' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l insecure-key-file -d 'Accept a key file that group or others may read (refused otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l allow-unauthenticated -d 'Accept unauthenticated clients on a non-loopback address'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -s 1 -l one-off -d 'Serve one test (whatever its outcome, once it is recorded), then exit (like iperf3 -1)'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l allow-profile -d 'Profile this host\'s CPUs when a client\'s test asks (`--profile`): perf sampling of every CPU the server end uses, classified into categories, sent back with the results. Off by default (a profile shows the host\'s kernel and other processes\' activity); without it such a test runs unprofiled at this end and says so. Needs --auth-keys: a profile shows the whole host, so only authenticated clients get one'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l allow-third-party -d 'Run third-party tests: an authenticated client (`stream -H B --from THIS`) may ask this daemon to run a test as the client against another daemon B, which must itself accept the client\'s identity (it issues the client a single-use ticket for that test). This daemon\'s limits and per-peer caps apply to the test as to the client\'s own. Off by default. Needs --auth-keys'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l allow-profile-unauthenticated -d 'Profile unauthenticated clients too: only for a daemon nobody but root can reach (a study\'s, inside the study\'s own network namespace)'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -l iperf3 -d 'Also serve stock iperf3 clients (`iperf3 -c`, 3.9 and later; TCP) on --iperf3-port, beside the native port, under the same limits. iperf3 clients cannot authenticate: with --auth-keys their tests are refused, and on an address other than loopback --iperf3 needs --allow-unauthenticated'
complete -c wirebench -n "__fish_wirebench_using_subcommand serve" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s H -s c -l host -d 'Server host name or address. Without it, an embedded server on loopback is used. (-c, iperf3\'s client flag, is accepted for -H.)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s p -l port -d 'Server port (default 5301); needs -H' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l from -d 'Run the test from the wirebench daemon at AGENT (port 5301 unless given) as the client, against -H (a third-party test): this process carries no data. It asks -H for a ticket, then the agent to run the test with it, authenticating to both with --auth; the agent needs `serve --allow-third-party`. Not with --iperf3' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s t -l duration -d 'Measured duration in seconds (after warm-up); default 10. With `stream -n/-k`, the longest the test may run (default 300)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l warmup -d 'Warm-up in seconds, excluded from every figure' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s i -l interval -d 'Live interval lines every N seconds (0.1 to the test\'s duration); 0 turns them off. Default: 1 on a terminal with human output, none otherwise' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s P -l flows -d 'Parallel flows (per direction)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s w -l window -d 'SO_SNDBUF/SO_RCVBUF on both ends (suffixes K, M, G = 1024^n); the effective sizes the kernel chose are reported' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s C -l congestion -d 'TCP congestion control on every data connection (both ends), e.g. cubic' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l auth -d 'Authenticate as IDENTITY (the key comes from --auth-key-file or WIREBENCH_AUTH_KEY)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l auth-key-file -d 'File with the key: a bare hex key, or a key file with a line for IDENTITY' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s A -l affinity -d 'Pin data threads: LOCAL,REMOTE CPU numbers (either may be empty), e.g. 0,1 or ,1' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l profile-hz -d 'Profiling frequency, samples per second per CPU (default 241: each sample interrupts the CPU, and 4000 cost 14-21 % of a CPU-bound stream on 2-vCPU VMs); implies --profile. Prefer a prime (241, 3989): a rate in step with the kernel\'s tick or with millisecond timers samples few phases of them, and the result says so' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l iterations -d 'Repeat the test MIN..MAX times until the confidence target is met (e.g. 3,10)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l confidence -d 'Confidence LEVEL,WIDTH: level 95 or 99, width in percent of the mean (default 99,5); needs --iterations' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s o -l output -d 'Also write the result to FILE: JSON, or CSV with --csv (atomically: a reader sees all of it or none); `-` is stdout alone. Checked before the test starts' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s f -l format -d 'Rates in this unit: k, m, g (kbit/s, Mbit/s, Gbit/s), K, M, G (kB/s, MB/s, GB/s); a / A chooses bits / bytes automatically (default a). Like iperf3\'s -f' -r -f -a "a\t''
A\t''
k\t''
m\t''
g\t''
K\t''
M\t''
G\t''"
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s T -l title -d 'A title printed with the result and kept in its JSON (like iperf3\'s -T)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l connect-timeout -d 'Bound on connecting to the server, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s B -l bind -d 'Start every connection (and UDP socket) from this local address (like iperf3 -B)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l cport -d 'Source port of the first data connection, the next flows the following ports (like iperf3 --cport)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s S -l tos -d 'IP type of service / traffic class of every data socket at both ends, e.g. 0x10 or 16 (like iperf3 -S)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l dscp -d 'DSCP of every data socket (0-63, or a name: ef, af11..af43, cs0..cs7); sets the TOS byte\'s upper six bits' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l fq-rate -d 'Cap every data socket\'s pacing rate (SO_MAX_PACING_RATE) at RATE bits/s (K/M/G = 10^3/10^6/10^9), at both ends (like iperf3 --fq-rate)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s M -l set-mss -d 'TCP maximum segment size on every data connection, bytes (TCP_MAXSEG; like iperf3 -M)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l notsent-lowat -d 'TCP_NOTSENT_LOWAT on every data connection at both ends (suffixes K, M, G = 1024^n; like iperf2 --tcp-write-prefetch): a sender writes only while less than SIZE of its socket\'s queue is unsent. With many flows, e.g. 16K keeps the unsent data out of the kernel\'s memory' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l buffer-offset -d 'Start every data buffer at both ends BYTES past a page boundary (0-4095; default 0, page-aligned). On some CPUs (AMD Zen 3) the kernel copies into a buffer that starts 1-31 bytes after the socket data\'s offset in its page about 20x slower; this shows it' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l db -d 'The history database (default `$XDG_DATA_HOME/wirebench/history.db`, or `~/.local/share/wirebench/history.db`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l tag -d 'A KEY=VALUE tag saved with the result (repeatable), e.g. --tag kernel=6.12' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s l -l msg-size -d 'Bytes per send/receive call (suffixes K, M, G are powers of 1024). Default 1M (fewer calls per byte: the path, not the call overhead, is measured), halved for many flows: on the epoll engine (above 32 connections, unpaced, copy paths) until one call per connection sums to 4 GiB (256K at -P 10000), otherwise until message size x connections fits the 512 MiB buffer bound (512K for -Z at -P 1000). iperf3\'s default is 128K: pass -l 128K to compare call for call' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l send-size -d 'Bytes per send call at the sending end (netperf -m); overrides -l for the sender' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l recv-size -d 'Bytes per receive call at the receiving end (netperf -M); overrides -l for the receiver. Without it or -l, a sender that does not copy (-Z, --send-path sendfile, splice, zerocopy, uring-zc) is received in 256K calls: the receiver\'s copy is then the bottleneck and a cache-sized buffer moves more' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s n -l bytes -d 'Stop after BYTES of payload per direction (K, M, G = 1024^n; like iperf3 -n), split over the flows; -t is then the upper bound. The figures cover the first byte to the last' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s k -l blocks -d 'Stop after COUNT send calls\' worth of payload per direction (COUNT x the send size; like iperf3 -k)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s b -l rate -d 'Pace each flow to RATE bits/s of payload (K/M/G = 10^3/10^6/10^9), like iperf3 -b' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l send-path -d 'How the sending end sends: copy (write), sendfile (from a memory file), splice (vmsplice + splice), zerocopy (MSG_ZEROCOPY), uring (io_uring SEND) or uring_zc (io_uring SEND_ZC). An end that cannot use it falls back to copy and warns' -r -f -a "copy\t'write(2)'
sendfile\t'sendfile(2) from a memory-backed file'
splice\t'vmsplice(2) + splice(2)'
zerocopy\t'send(MSG_ZEROCOPY)'
uring\t'io_uring SEND (copies, like write, without a system call per message)'
uring_zc\t'io_uring SEND_ZC from a registered buffer (Linux 6.0+)'"
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l recv-path -d 'How the receiving end receives: copy (read), discard (recv MSG_TRUNC, data never reaches the application), splice (to /dev/null, likewise), zerocopy (TCP_ZEROCOPY_RECEIVE) or uring (io_uring). Falls back to copy like --send-path' -r -f -a "copy\t'read(2)'
discard\t'recv(MSG_TRUNC)'
splice\t'splice(2) to /dev/null'
zerocopy\t'TCP_ZEROCOPY_RECEIVE'
uring\t'io_uring'"
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l recv-wait -d 'How each receiving flow waits while its socket is empty (copy, discard and splice paths): auto (the default: nap while the calls are at most 512 KiB and the socket\'s receive buffer at least 1.5 MiB, else block; an epoll worker naps the same way with the sum of its flows\' buffers; the zerocopy and uring paths wait their own way), block (in the receive call, or epoll_wait), nap (zero-timeout poll, then up to 4 sleeps of 20 us on the thread\'s own timer, then block: the sender\'s CPU then wakes nobody) or spin (zero-timeout polls for up to 50 us, then block; costs receiver CPU); nap and spin need a thread per flow. Reported per direction' -r -f -a "auto\t'Nap with a large receive buffer, else block'
block\t'Block in the receive call'
nap\t'Poll, nap on the thread\'s timer, then block'
spin\t'Poll without sleeping, then block'"
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l threads -d 'Run both ends on N epoll worker threads (neper\'s model: each worker owns an epoll set and every N-th flow; copy paths, unpaced). Default: a thread per flow up to 32 flows, above that one worker per online CPU' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l retry -d 'With --iperf3: while the server is busy with another test, try again up to N times, waiting 0.25 s, then twice as long each time (at most 4 s)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l insecure-key-file -d 'Accept a --auth-key-file that group or others may read (refused otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s 4 -d 'Use IPv4 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s 6 -d 'Use IPv6 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l profile -d 'Profile where each end\'s CPUs spend the measurement window (perf sampling of the CPUs the end uses: all online CPUs, or its --affinity CPU): a breakdown into copy, checksum, memory management, interrupts, driver, TCP, IP, socket/syscall, scheduler, locks, wirebench, the profiler itself, other and idle. Needs root or CAP_PERFMON (or perf_event_paranoid <= 0); the server profiles only with `serve --allow-profile`'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s J -l json -d 'Print one JSON RunResult document on stdout (-J as in iperf3)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l json-stream -d 'Print newline-delimited JSON: one object per live interval, then one with the result (intervals every second unless -i says otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l csv -d 'Print CSV on stdout: a row per run and direction; with --intervals a row per interval, with --per-flow a row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l intervals -d 'With --csv: a row per live interval (the time series) instead of per run'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l per-flow -d 'A row per flow in the human output whatever the number of flows (default: above 16 flows a direction, its slowest 5 and the spread); with --csv, a CSV row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s v -l verbose -d 'Human output: everything (the per-direction notes, engines, each end\'s CPU breakdown, the verdict\'s evidence and suggestions, the footer defining the figures)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s q -l quiet -d 'Human output: only a summary line per test (per direction of a stream or UDP test) and errors; no live lines'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l timestamps -d 'Prefix every live line with the wall-clock time (like iperf3\'s --timestamps)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l dont-fragment -d 'Set Don\'t Fragment on every data socket (path-MTU discovery always on)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l no-save -d 'Do not save this result to the history database'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s R -l reverse -d 'Server sends, client receives'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l bidir -d 'Both directions at once'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s N -l nodelay -d 'Set TCP_NODELAY on data connections'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s Z -d 'Same as --send-path sendfile (iperf3 -Z)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l verify -d 'Check every received byte against the expected payload (not with --recv-path discard or splice, which never see the data)'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l pin-threads -d 'Pin each end\'s data threads (workers, or one thread per flow) round-robin over the CPUs that end may use. --affinity, where given, pins that end to one CPU instead'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -l iperf3 -d 'Test against a stock iperf3 server (`iperf3 -s`) at -H, port 5201 unless -p: this end is measured as usual (its own intervals, TCP_INFO, CPU), the server\'s figures come from iperf3\'s results exchange and are shown beside them, reconciled'
complete -c wirebench -n "__fish_wirebench_using_subcommand stream" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s H -s c -l host -d 'Server host name or address. Without it, an embedded server on loopback is used. (-c, iperf3\'s client flag, is accepted for -H.)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s p -l port -d 'Server port (default 5301); needs -H' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l from -d 'Run the test from the wirebench daemon at AGENT (port 5301 unless given) as the client, against -H (a third-party test): this process carries no data. It asks -H for a ticket, then the agent to run the test with it, authenticating to both with --auth; the agent needs `serve --allow-third-party`. Not with --iperf3' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s t -l duration -d 'Measured duration in seconds (after warm-up); default 10. With `stream -n/-k`, the longest the test may run (default 300)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l warmup -d 'Warm-up in seconds, excluded from every figure' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s i -l interval -d 'Live interval lines every N seconds (0.1 to the test\'s duration); 0 turns them off. Default: 1 on a terminal with human output, none otherwise' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s P -l flows -d 'Parallel flows (per direction)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s w -l window -d 'SO_SNDBUF/SO_RCVBUF on both ends (suffixes K, M, G = 1024^n); the effective sizes the kernel chose are reported' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s C -l congestion -d 'TCP congestion control on every data connection (both ends), e.g. cubic' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l auth -d 'Authenticate as IDENTITY (the key comes from --auth-key-file or WIREBENCH_AUTH_KEY)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l auth-key-file -d 'File with the key: a bare hex key, or a key file with a line for IDENTITY' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s A -l affinity -d 'Pin data threads: LOCAL,REMOTE CPU numbers (either may be empty), e.g. 0,1 or ,1' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l profile-hz -d 'Profiling frequency, samples per second per CPU (default 241: each sample interrupts the CPU, and 4000 cost 14-21 % of a CPU-bound stream on 2-vCPU VMs); implies --profile. Prefer a prime (241, 3989): a rate in step with the kernel\'s tick or with millisecond timers samples few phases of them, and the result says so' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l iterations -d 'Repeat the test MIN..MAX times until the confidence target is met (e.g. 3,10)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l confidence -d 'Confidence LEVEL,WIDTH: level 95 or 99, width in percent of the mean (default 99,5); needs --iterations' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s o -l output -d 'Also write the result to FILE: JSON, or CSV with --csv (atomically: a reader sees all of it or none); `-` is stdout alone. Checked before the test starts' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s f -l format -d 'Rates in this unit: k, m, g (kbit/s, Mbit/s, Gbit/s), K, M, G (kB/s, MB/s, GB/s); a / A chooses bits / bytes automatically (default a). Like iperf3\'s -f' -r -f -a "a\t''
A\t''
k\t''
m\t''
g\t''
K\t''
M\t''
G\t''"
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s T -l title -d 'A title printed with the result and kept in its JSON (like iperf3\'s -T)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l connect-timeout -d 'Bound on connecting to the server, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s B -l bind -d 'Start every connection (and UDP socket) from this local address (like iperf3 -B)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l cport -d 'Source port of the first data connection, the next flows the following ports (like iperf3 --cport)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s S -l tos -d 'IP type of service / traffic class of every data socket at both ends, e.g. 0x10 or 16 (like iperf3 -S)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l dscp -d 'DSCP of every data socket (0-63, or a name: ef, af11..af43, cs0..cs7); sets the TOS byte\'s upper six bits' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l fq-rate -d 'Cap every data socket\'s pacing rate (SO_MAX_PACING_RATE) at RATE bits/s (K/M/G = 10^3/10^6/10^9), at both ends (like iperf3 --fq-rate)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s M -l set-mss -d 'TCP maximum segment size on every data connection, bytes (TCP_MAXSEG; like iperf3 -M)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l notsent-lowat -d 'TCP_NOTSENT_LOWAT on every data connection at both ends (suffixes K, M, G = 1024^n; like iperf2 --tcp-write-prefetch): a sender writes only while less than SIZE of its socket\'s queue is unsent. With many flows, e.g. 16K keeps the unsent data out of the kernel\'s memory' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l buffer-offset -d 'Start every data buffer at both ends BYTES past a page boundary (0-4095; default 0, page-aligned). On some CPUs (AMD Zen 3) the kernel copies into a buffer that starts 1-31 bytes after the socket data\'s offset in its page about 20x slower; this shows it' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l db -d 'The history database (default `$XDG_DATA_HOME/wirebench/history.db`, or `~/.local/share/wirebench/history.db`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l tag -d 'A KEY=VALUE tag saved with the result (repeatable), e.g. --tag kernel=6.12' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s l -l msg-size -d 'Bytes per request and per response: a ping-pong of equal messages (NetPIPE\'s, the Trapeze latency figure); --request-size/--response-size override either' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l request-size -d 'Bytes per request (K/M = 1024^n); default 1, with --udp 8 (the sequence number)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l response-size -d 'Bytes per response (K/M = 1024^n); default 1, with --udp 8' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l burst -d 'Transactions in flight per flow (netperf\'s -b); TCP closed loop only' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s b -l rate -d 'Open loop: send requests on a fixed schedule of N transactions per second per flow and measure latency from each scheduled send time (no coordinated omission). TCP only. (-b is a rate in every command.)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l max-outstanding -d 'Open loop: most requests outstanding per flow (default 1000)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l udp-timeout -d 'UDP: wait this many milliseconds for a response before counting it lost' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l busy-poll -d 'Busy polling at both ends, to take the scheduler out of the round trip: the data sockets are non-blocking and each flow thread spins on them (yielding the CPU between attempts) instead of sleeping, and SO_BUSY_POLL is set to US microseconds (default 50; 0 leaves it unset; it helps only devices with NAPI busy polling). Both ends\' CPU then counts the spinning. Compare with a run without it to see the wake-up cost. `--busy-poll off` (the default) is accepted too, so that it can be a sweep factor' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l under-load -d 'Latency under load (flent\'s RRUL idea): measure the test alone first, then again beside N stream flows per direction on the same path, and report the latency the load induced (0 = no load)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l load-direction -d 'The load\'s direction' -r -f -a "forward\t'Client to server (the requests\' direction)'
reverse\t'Server to client (the responses\' direction)'
bidir\t'Both at once (RRUL)'"
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l load-rate -d 'Pace each load flow to RATE bits/s (K/M/G = 10^3/10^6/10^9); default unpaced' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l insecure-key-file -d 'Accept a --auth-key-file that group or others may read (refused otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s 4 -d 'Use IPv4 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s 6 -d 'Use IPv6 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l profile -d 'Profile where each end\'s CPUs spend the measurement window (perf sampling of the CPUs the end uses: all online CPUs, or its --affinity CPU): a breakdown into copy, checksum, memory management, interrupts, driver, TCP, IP, socket/syscall, scheduler, locks, wirebench, the profiler itself, other and idle. Needs root or CAP_PERFMON (or perf_event_paranoid <= 0); the server profiles only with `serve --allow-profile`'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s J -l json -d 'Print one JSON RunResult document on stdout (-J as in iperf3)'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l json-stream -d 'Print newline-delimited JSON: one object per live interval, then one with the result (intervals every second unless -i says otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l csv -d 'Print CSV on stdout: a row per run and direction; with --intervals a row per interval, with --per-flow a row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l intervals -d 'With --csv: a row per live interval (the time series) instead of per run'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l per-flow -d 'A row per flow in the human output whatever the number of flows (default: above 16 flows a direction, its slowest 5 and the spread); with --csv, a CSV row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s v -l verbose -d 'Human output: everything (the per-direction notes, engines, each end\'s CPU breakdown, the verdict\'s evidence and suggestions, the footer defining the figures)'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s q -l quiet -d 'Human output: only a summary line per test (per direction of a stream or UDP test) and errors; no live lines'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l timestamps -d 'Prefix every live line with the wall-clock time (like iperf3\'s --timestamps)'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l dont-fragment -d 'Set Don\'t Fragment on every data socket (path-MTU discovery always on)'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l no-save -d 'Do not save this result to the history database'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -l udp -d 'UDP request/response (netperf UDP_RR): a datagram each way; a response not back within --udp-timeout counts as lost and the flow goes on'
complete -c wirebench -n "__fish_wirebench_using_subcommand rr" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s H -s c -l host -d 'Server host name or address. Without it, an embedded server on loopback is used. (-c, iperf3\'s client flag, is accepted for -H.)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s p -l port -d 'Server port (default 5301); needs -H' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l from -d 'Run the test from the wirebench daemon at AGENT (port 5301 unless given) as the client, against -H (a third-party test): this process carries no data. It asks -H for a ticket, then the agent to run the test with it, authenticating to both with --auth; the agent needs `serve --allow-third-party`. Not with --iperf3' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s t -l duration -d 'Measured duration in seconds (after warm-up); default 10. With `stream -n/-k`, the longest the test may run (default 300)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l warmup -d 'Warm-up in seconds, excluded from every figure' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s i -l interval -d 'Live interval lines every N seconds (0.1 to the test\'s duration); 0 turns them off. Default: 1 on a terminal with human output, none otherwise' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s P -l flows -d 'Parallel flows (per direction)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s w -l window -d 'SO_SNDBUF/SO_RCVBUF on both ends (suffixes K, M, G = 1024^n); the effective sizes the kernel chose are reported' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s C -l congestion -d 'TCP congestion control on every data connection (both ends), e.g. cubic' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l auth -d 'Authenticate as IDENTITY (the key comes from --auth-key-file or WIREBENCH_AUTH_KEY)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l auth-key-file -d 'File with the key: a bare hex key, or a key file with a line for IDENTITY' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s A -l affinity -d 'Pin data threads: LOCAL,REMOTE CPU numbers (either may be empty), e.g. 0,1 or ,1' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l profile-hz -d 'Profiling frequency, samples per second per CPU (default 241: each sample interrupts the CPU, and 4000 cost 14-21 % of a CPU-bound stream on 2-vCPU VMs); implies --profile. Prefer a prime (241, 3989): a rate in step with the kernel\'s tick or with millisecond timers samples few phases of them, and the result says so' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l iterations -d 'Repeat the test MIN..MAX times until the confidence target is met (e.g. 3,10)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l confidence -d 'Confidence LEVEL,WIDTH: level 95 or 99, width in percent of the mean (default 99,5); needs --iterations' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s o -l output -d 'Also write the result to FILE: JSON, or CSV with --csv (atomically: a reader sees all of it or none); `-` is stdout alone. Checked before the test starts' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s f -l format -d 'Rates in this unit: k, m, g (kbit/s, Mbit/s, Gbit/s), K, M, G (kB/s, MB/s, GB/s); a / A chooses bits / bytes automatically (default a). Like iperf3\'s -f' -r -f -a "a\t''
A\t''
k\t''
m\t''
g\t''
K\t''
M\t''
G\t''"
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s T -l title -d 'A title printed with the result and kept in its JSON (like iperf3\'s -T)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l connect-timeout -d 'Bound on connecting to the server, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s B -l bind -d 'Start every connection (and UDP socket) from this local address (like iperf3 -B)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l cport -d 'Source port of the first data connection, the next flows the following ports (like iperf3 --cport)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s S -l tos -d 'IP type of service / traffic class of every data socket at both ends, e.g. 0x10 or 16 (like iperf3 -S)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l dscp -d 'DSCP of every data socket (0-63, or a name: ef, af11..af43, cs0..cs7); sets the TOS byte\'s upper six bits' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l fq-rate -d 'Cap every data socket\'s pacing rate (SO_MAX_PACING_RATE) at RATE bits/s (K/M/G = 10^3/10^6/10^9), at both ends (like iperf3 --fq-rate)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s M -l set-mss -d 'TCP maximum segment size on every data connection, bytes (TCP_MAXSEG; like iperf3 -M)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l notsent-lowat -d 'TCP_NOTSENT_LOWAT on every data connection at both ends (suffixes K, M, G = 1024^n; like iperf2 --tcp-write-prefetch): a sender writes only while less than SIZE of its socket\'s queue is unsent. With many flows, e.g. 16K keeps the unsent data out of the kernel\'s memory' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l buffer-offset -d 'Start every data buffer at both ends BYTES past a page boundary (0-4095; default 0, page-aligned). On some CPUs (AMD Zen 3) the kernel copies into a buffer that starts 1-31 bytes after the socket data\'s offset in its page about 20x slower; this shows it' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l db -d 'The history database (default `$XDG_DATA_HOME/wirebench/history.db`, or `~/.local/share/wirebench/history.db`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l tag -d 'A KEY=VALUE tag saved with the result (repeatable), e.g. --tag kernel=6.12' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l request-size -d 'Bytes per request (K/M = 1024^n)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l response-size -d 'Bytes per response (K/M = 1024^n)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l insecure-key-file -d 'Accept a --auth-key-file that group or others may read (refused otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s 4 -d 'Use IPv4 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s 6 -d 'Use IPv6 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l profile -d 'Profile where each end\'s CPUs spend the measurement window (perf sampling of the CPUs the end uses: all online CPUs, or its --affinity CPU): a breakdown into copy, checksum, memory management, interrupts, driver, TCP, IP, socket/syscall, scheduler, locks, wirebench, the profiler itself, other and idle. Needs root or CAP_PERFMON (or perf_event_paranoid <= 0); the server profiles only with `serve --allow-profile`'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s J -l json -d 'Print one JSON RunResult document on stdout (-J as in iperf3)'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l json-stream -d 'Print newline-delimited JSON: one object per live interval, then one with the result (intervals every second unless -i says otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l csv -d 'Print CSV on stdout: a row per run and direction; with --intervals a row per interval, with --per-flow a row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l intervals -d 'With --csv: a row per live interval (the time series) instead of per run'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l per-flow -d 'A row per flow in the human output whatever the number of flows (default: above 16 flows a direction, its slowest 5 and the spread); with --csv, a CSV row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s v -l verbose -d 'Human output: everything (the per-direction notes, engines, each end\'s CPU breakdown, the verdict\'s evidence and suggestions, the footer defining the figures)'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s q -l quiet -d 'Human output: only a summary line per test (per direction of a stream or UDP test) and errors; no live lines'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l timestamps -d 'Prefix every live line with the wall-clock time (like iperf3\'s --timestamps)'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l dont-fragment -d 'Set Don\'t Fragment on every data socket (path-MTU discovery always on)'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l no-save -d 'Do not save this result to the history database'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -l abortive-close -d 'Close each connection with RST (SO_LINGER 0) instead of an orderly FIN exchange: no TIME_WAIT, but not what most applications do. The result says which close was used'
complete -c wirebench -n "__fish_wirebench_using_subcommand crr" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s H -s c -l host -d 'Server host name or address. Without it, an embedded server on loopback is used. (-c, iperf3\'s client flag, is accepted for -H.)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s p -l port -d 'Server port (default 5301); needs -H' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l from -d 'Run the test from the wirebench daemon at AGENT (port 5301 unless given) as the client, against -H (a third-party test): this process carries no data. It asks -H for a ticket, then the agent to run the test with it, authenticating to both with --auth; the agent needs `serve --allow-third-party`. Not with --iperf3' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s t -l duration -d 'Measured duration in seconds (after warm-up); default 10. With `stream -n/-k`, the longest the test may run (default 300)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l warmup -d 'Warm-up in seconds, excluded from every figure' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s i -l interval -d 'Live interval lines every N seconds (0.1 to the test\'s duration); 0 turns them off. Default: 1 on a terminal with human output, none otherwise' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s P -l flows -d 'Parallel flows (per direction)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s w -l window -d 'SO_SNDBUF/SO_RCVBUF on both ends (suffixes K, M, G = 1024^n); the effective sizes the kernel chose are reported' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s C -l congestion -d 'TCP congestion control on every data connection (both ends), e.g. cubic' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l auth -d 'Authenticate as IDENTITY (the key comes from --auth-key-file or WIREBENCH_AUTH_KEY)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l auth-key-file -d 'File with the key: a bare hex key, or a key file with a line for IDENTITY' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s A -l affinity -d 'Pin data threads: LOCAL,REMOTE CPU numbers (either may be empty), e.g. 0,1 or ,1' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l profile-hz -d 'Profiling frequency, samples per second per CPU (default 241: each sample interrupts the CPU, and 4000 cost 14-21 % of a CPU-bound stream on 2-vCPU VMs); implies --profile. Prefer a prime (241, 3989): a rate in step with the kernel\'s tick or with millisecond timers samples few phases of them, and the result says so' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l iterations -d 'Repeat the test MIN..MAX times until the confidence target is met (e.g. 3,10)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l confidence -d 'Confidence LEVEL,WIDTH: level 95 or 99, width in percent of the mean (default 99,5); needs --iterations' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s o -l output -d 'Also write the result to FILE: JSON, or CSV with --csv (atomically: a reader sees all of it or none); `-` is stdout alone. Checked before the test starts' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s f -l format -d 'Rates in this unit: k, m, g (kbit/s, Mbit/s, Gbit/s), K, M, G (kB/s, MB/s, GB/s); a / A chooses bits / bytes automatically (default a). Like iperf3\'s -f' -r -f -a "a\t''
A\t''
k\t''
m\t''
g\t''
K\t''
M\t''
G\t''"
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s T -l title -d 'A title printed with the result and kept in its JSON (like iperf3\'s -T)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l connect-timeout -d 'Bound on connecting to the server, seconds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s B -l bind -d 'Start every connection (and UDP socket) from this local address (like iperf3 -B)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l cport -d 'Source port of the first data connection, the next flows the following ports (like iperf3 --cport)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s S -l tos -d 'IP type of service / traffic class of every data socket at both ends, e.g. 0x10 or 16 (like iperf3 -S)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l dscp -d 'DSCP of every data socket (0-63, or a name: ef, af11..af43, cs0..cs7); sets the TOS byte\'s upper six bits' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l fq-rate -d 'Cap every data socket\'s pacing rate (SO_MAX_PACING_RATE) at RATE bits/s (K/M/G = 10^3/10^6/10^9), at both ends (like iperf3 --fq-rate)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s M -l set-mss -d 'TCP maximum segment size on every data connection, bytes (TCP_MAXSEG; like iperf3 -M)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l notsent-lowat -d 'TCP_NOTSENT_LOWAT on every data connection at both ends (suffixes K, M, G = 1024^n; like iperf2 --tcp-write-prefetch): a sender writes only while less than SIZE of its socket\'s queue is unsent. With many flows, e.g. 16K keeps the unsent data out of the kernel\'s memory' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l buffer-offset -d 'Start every data buffer at both ends BYTES past a page boundary (0-4095; default 0, page-aligned). On some CPUs (AMD Zen 3) the kernel copies into a buffer that starts 1-31 bytes after the socket data\'s offset in its page about 20x slower; this shows it' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l db -d 'The history database (default `$XDG_DATA_HOME/wirebench/history.db`, or `~/.local/share/wirebench/history.db`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l tag -d 'A KEY=VALUE tag saved with the result (repeatable), e.g. --tag kernel=6.12' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s l -l msg-size -d 'Bytes per datagram (UDP payload, 24-byte header included; K = 1024)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s b -l rate -d 'Rate per flow, bits/s of UDP payload (K/M/G = 10^3/10^6/10^9), paced at 1 ms or finer; 0 = unpaced (as fast as the sender can)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l retry -d 'With --iperf3: while the server is busy with another test, try again up to N times, waiting 0.25 s, then twice as long each time (at most 4 s)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l insecure-key-file -d 'Accept a --auth-key-file that group or others may read (refused otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s 4 -d 'Use IPv4 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s 6 -d 'Use IPv6 only'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l profile -d 'Profile where each end\'s CPUs spend the measurement window (perf sampling of the CPUs the end uses: all online CPUs, or its --affinity CPU): a breakdown into copy, checksum, memory management, interrupts, driver, TCP, IP, socket/syscall, scheduler, locks, wirebench, the profiler itself, other and idle. Needs root or CAP_PERFMON (or perf_event_paranoid <= 0); the server profiles only with `serve --allow-profile`'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s J -l json -d 'Print one JSON RunResult document on stdout (-J as in iperf3)'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l json-stream -d 'Print newline-delimited JSON: one object per live interval, then one with the result (intervals every second unless -i says otherwise)'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l csv -d 'Print CSV on stdout: a row per run and direction; with --intervals a row per interval, with --per-flow a row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l intervals -d 'With --csv: a row per live interval (the time series) instead of per run'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l per-flow -d 'A row per flow in the human output whatever the number of flows (default: above 16 flows a direction, its slowest 5 and the spread); with --csv, a CSV row per flow'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s v -l verbose -d 'Human output: everything (the per-direction notes, engines, each end\'s CPU breakdown, the verdict\'s evidence and suggestions, the footer defining the figures)'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s q -l quiet -d 'Human output: only a summary line per test (per direction of a stream or UDP test) and errors; no live lines'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l timestamps -d 'Prefix every live line with the wall-clock time (like iperf3\'s --timestamps)'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l dont-fragment -d 'Set Don\'t Fragment on every data socket (path-MTU discovery always on)'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l no-save -d 'Do not save this result to the history database'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s R -l reverse -d 'Server sends, client receives'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l bidir -d 'Both directions at once'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l iperf3 -d 'The server is a stock `iperf3 -s` (port 5201 unless -p): wirebench runs the test as an iperf3 UDP client (iperf3\'s connect datagram per stream and its datagram header), and shows the server\'s figures (received, lost, jitter; or what it sent, -R) beside its own, with each flow\'s datagrams reconciled'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -l udp-counters-64bit -d 'With --iperf3: 64-bit sequence numbers in the datagrams (iperf3\'s --udp-counters-64bit; the header is 16 bytes instead of 12)'
complete -c wirebench -n "__fish_wirebench_using_subcommand udp" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand keygen" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and not __fish_seen_subcommand_from up show exec down _emulate help" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and not __fish_seen_subcommand_from up show exec down _emulate help" -f -a "up" -d 'Build a named lab: namespaces wbl-NAME-c (client, 198.18.0.1) and wbl-NAME-s (server, 198.18.0.2) joined by a veth pair; with impairments through a middle namespace wbl-NAME-m and a background emulator. Every setting is read back'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and not __fish_seen_subcommand_from up show exec down _emulate help" -f -a "show" -d 'Show one lab (read back from the kernel) or list all'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and not __fish_seen_subcommand_from up show exec down _emulate help" -f -a "exec" -d 'Run a command inside the client or server namespace of a lab'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and not __fish_seen_subcommand_from up show exec down _emulate help" -f -a "down" -d 'Remove a lab (its emulator, namespaces and state), all labs, or the stale ones'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and not __fish_seen_subcommand_from up show exec down _emulate help" -f -a "_emulate" -d 'The emulator process of a lab (started by `lab up`)'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and not __fish_seen_subcommand_from up show exec down _emulate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l mtu -d 'MTU of every veth end' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l offload -d 'Offloads of both endpoints, `feature=on|off,...` (tx-checksum, rx-checksum, sg, tso, gso, gro, lro, or any `ethtool -k` feature name). Repeatable' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l rate -d 'Rate limit of the client→server direction (tc tbf on the client\'s egress), bits/s: 100mbit, 1g, 500k' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l delay -d 'One-way delay added in each direction (5ms, 250us); runs the link through the emulator' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l jitter -d 'Uniform delay variation, delay ± jitter (never reorders)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l loss -d 'Frames lost in each direction, percent (1%, 0.5)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l reorder -d 'Frames held back so that later ones overtake them, percent' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l reorder-gap -d 'How long a reordered frame is held back (default 10ms)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l duplicate -d 'Frames sent twice, percent' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l seed -d 'Seed of the emulator\'s random draws' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l cc -d 'TCP congestion control of the lab (congctl on its routes; the host is untouched)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l sysctl -d 'A net.* sysctl in the endpoint namespaces, `[client:|server:]KEY=VALUE`. Repeatable' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l rps -d 'RPS CPU mask (hex) of both endpoints\' receive queue' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l xps -d 'XPS CPU mask (hex) of both endpoints\' transmit queue' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l rate-both -d 'Apply --rate to the server→client direction too'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l emulate -d 'Run the link through the emulator even without impairments'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l ipv6 -d 'Also give the endpoints IPv6 addresses (fd77:6c62:6c00::1 and ::2)'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -l json -d 'Print the read-back as JSON'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from up" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from show" -l json -d 'JSON instead of a table'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from exec" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from down" -l all -d 'Remove every lab'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from down" -l stale -d 'Remove the labs whose building, owning or emulator process is gone'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from down" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from _emulate" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "up" -d 'Build a named lab: namespaces wbl-NAME-c (client, 198.18.0.1) and wbl-NAME-s (server, 198.18.0.2) joined by a veth pair; with impairments through a middle namespace wbl-NAME-m and a background emulator. Every setting is read back'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show one lab (read back from the kernel) or list all'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "exec" -d 'Run a command inside the client or server namespace of a lab'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "down" -d 'Remove a lab (its emulator, namespaces and state), all labs, or the stale ones'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "_emulate" -d 'The emulator process of a lab (started by `lab up`)'
complete -c wirebench -n "__fish_wirebench_using_subcommand lab; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and not __fish_seen_subcommand_from run show help" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and not __fish_seen_subcommand_from run show help" -f -a "run" -d 'Run a study file (or continue one with --resume DIR)'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and not __fish_seen_subcommand_from run show help" -f -a "show" -d 'Print a study directory\'s tables and expectations'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and not __fish_seen_subcommand_from run show help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -s o -l output -d 'Output directory (default `study-YYYYMMDD-HHMMSS`; with --all, the parent of one directory per study, default `studies-YYYYMMDD-HHMMSS`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l resume -d 'Continue the study in DIR: measure only the points it lacks' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l studies-dir -d 'The shipped studies\' directory for --all (default: $WIREBENCH_STUDIES, then PREFIX/share/wirebench/studies beside the binary, the source checkout\'s studies/, ./studies)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l repeat -d 'Measure every cell\'s points N times (rounds interleaved across the cells), overriding the file\'s `repeat`' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l db -d 'The history database (default `$XDG_DATA_HOME/wirebench/history.db`, or `~/.local/share/wirebench/history.db`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l tag -d 'A KEY=VALUE tag saved with the result (repeatable), e.g. --tag kernel=6.12' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l all -d 'Run every shipped study (the *.toml files of the studies directory), then print the claims table: each seed claim, this machine\'s result and its verdict'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l force -d 'Replace a study already in the output directory (its manifest, results and cells)'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l dry-run -d 'Check the file and print the plan (cells, points, estimated time); build nothing'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l json -d 'Print the manifest as JSON at the end instead of the tables'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -l no-save -d 'Do not save this result to the history database'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from show" -l json -d 'Print the manifest (expectations evaluated) as JSON'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from help" -f -a "run" -d 'Run a study file (or continue one with --resume DIR)'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from help" -f -a "show" -d 'Print a study directory\'s tables and expectations'
complete -c wirebench -n "__fish_wirebench_using_subcommand study; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l hosts -d 'The hosts, comma-separated: addresses, ADDRESS:PORT, or DNS names (a name that resolves to several addresses, such as a Kubernetes headless Service, gives them all)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l plan -d 'A plan file (TOML): hosts, topology (full-mesh, star, incast, ring, pairs), tests, repetitions, period, overlap (docs/MESH.md)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -s p -l port -d 'The daemons\' port where a host names none (default 5301; wins over the plan\'s)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l auth -d 'Authenticate to every daemon as IDENTITY' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l auth-key-file -d 'File holding the key for --auth (a key file, or the hex key alone)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l every -d 'Run the whole plan again every DURATION (seconds, or with s, m, h, d: `10m`), until interrupted or --count rounds have run' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l count -d 'With --every: how many rounds' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -s o -l output -d 'Write the results directory: mesh.json, tests/NNNN.json (one per test, in mesh.json\'s order), report.html (heatmaps per ordered pair)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l db -d 'The history database (default `$XDG_DATA_HOME/wirebench/history.db`, or `~/.local/share/wirebench/history.db`)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l tag -d 'A KEY=VALUE tag saved with the result (repeatable), e.g. --tag kernel=6.12' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -s J -l json -d 'Print the mesh\'s JSON document (docs/mesh.schema.json) at the end, nothing else'
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -l no-save -d 'Do not save this result to the history database'
complete -c wirebench -n "__fish_wirebench_using_subcommand mesh" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand plot" -l kind -d 'Which figure: timeseries (a stream test\'s with TCP_INFO panels), tail, histogram, under-load (request/response), curve, curve-latency, latency-vs-load (sweeps), limits, table, ladder (studies); default the first that applies' -r -f -a "timeseries\t''
tail\t''
histogram\t''
under-load\t''
curve\t''
curve-latency\t''
latency-vs-load\t''
limits\t''
table\t''
ladder\t''"
complete -c wirebench -n "__fish_wirebench_using_subcommand plot" -s o -l output -d 'Write the SVG here (atomically) instead of to stdout' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand plot" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand report" -l compare -d 'Compare result files instead (A.json B.json, or sets split by `vs` as for `wirebench compare`): the page judges every figure and draws both sides, time series overlaid and boxes side by side' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand report" -l level -d 'Confidence level of a comparison\'s intervals, 95 or 99' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand report" -s o -l output -d 'The HTML file to write (atomically)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand report" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand limits" -l json -d 'Print the LimitsResult document as JSON'
complete -c wirebench -n "__fish_wirebench_using_subcommand limits" -l refresh -d 'Measure again even if this boot\'s limits are cached'
complete -c wirebench -n "__fish_wirebench_using_subcommand limits" -l quick -d 'Fewer buffer sizes, fewer and shorter batches (about 3 s instead of about 8)'
complete -c wirebench -n "__fish_wirebench_using_subcommand limits" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "list" -d 'Stored results, newest first'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "show" -d 'One stored result, printed as the test printed it (or its JSON with --json)'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "export" -d 'Stored results as JSON (one document, or an array) or CSV rows'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "delete" -d 'Delete one stored result'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "prune" -d 'Delete the results older than DAYS days'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "import" -d 'Store result JSON files and the daemon\'s --records JSON lines'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "compare" -d 'Compare two sets of stored results figure by figure, with statistics'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "regress" -d 'Exit 1 when the newest result (or the candidate set) is significantly worse than the baseline by more than the threshold, 0 otherwise (2: nothing to judge)'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and not __fish_seen_subcommand_from list show export delete prune import compare regress help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -l since -d 'Only results started at or after DATE (YYYY-MM-DD, YYYY-MM-DDTHH:MM UTC, or an age: 7d, 12h)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -l workload -d 'Only this workload (stream, rr, crr, udp_rr, udp_stream)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -l tag -d 'Only results with this tag (repeatable: all of them)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -l host -d 'Only results with this host at either end' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -l limit -d 'At most N results, newest first (0: all)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -l json -d 'The rows as a JSON array'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from show" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from show" -l json -d 'Its JSON document instead of the human report'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from show" -s v -l verbose -d 'The whole human report (as `-v` printed it)'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from show" -s q -l quiet -d 'Only the result\'s summary line'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from export" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from export" -l json -d 'JSON: the document, or an array of them when several match'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from export" -l csv -d 'CSV: each result\'s rows under one header'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from delete" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from delete" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from prune" -l older-than -d 'Delete the results that started more than DAYS days ago' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from prune" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from prune" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from import" -l tag -d 'A KEY=VALUE tag for every imported result (repeatable)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from import" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from import" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from compare" -l level -d 'Confidence level of the intervals, 95 or 99 (a figure is significant when its p-value is below 1 − level). 99 by default: several figures are judged at once' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from compare" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from compare" -l json -d 'The Comparison JSON document (docs/compare.schema.json) instead of words'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from compare" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from regress" -l baseline -d 'The baseline: a tag KEY=VALUE or a selector' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from regress" -l candidate -d 'The candidate set (default: the newest stored result that is not in the baseline)' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from regress" -l threshold -d 'A regression is a significant worsening by more than PCT percent' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from regress" -l level -d 'Confidence level of the intervals, 95 or 99 (a figure is significant when its p-value is below 1 − level). 99 by default: several figures are judged at once' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from regress" -l db -d 'The history database (default as for saving)' -r -F
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from regress" -l json -d 'The Comparison JSON document (docs/compare.schema.json) instead of words'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from regress" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "list" -d 'Stored results, newest first'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "show" -d 'One stored result, printed as the test printed it (or its JSON with --json)'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "export" -d 'Stored results as JSON (one document, or an array) or CSV rows'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "delete" -d 'Delete one stored result'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "prune" -d 'Delete the results older than DAYS days'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "import" -d 'Store result JSON files and the daemon\'s --records JSON lines'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "compare" -d 'Compare two sets of stored results figure by figure, with statistics'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "regress" -d 'Exit 1 when the newest result (or the candidate set) is significantly worse than the baseline by more than the threshold, 0 otherwise (2: nothing to judge)'
complete -c wirebench -n "__fish_wirebench_using_subcommand history; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand compare" -l level -d 'Confidence level of the intervals, 95 or 99 (a figure is significant when its p-value is below 1 − level). 99 by default: several figures are judged at once' -r
complete -c wirebench -n "__fish_wirebench_using_subcommand compare" -l json -d 'The Comparison JSON document (docs/compare.schema.json) instead of words'
complete -c wirebench -n "__fish_wirebench_using_subcommand compare" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand completions" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand sweep" -s h -l help -d 'Print help'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "serve" -d 'Run the daemon that clients test against'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "stream" -d 'TCP bulk-transfer test (like netperf TCP_STREAM / iperf3). Without -H, runs against an embedded server on loopback'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "rr" -d 'TCP request/response (netperf TCP_RR), or UDP with --udp (UDP_RR): transactions per second and round-trip latency percentiles'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "crr" -d 'TCP connect/request/response/close, a new connection per transaction (netperf TCP_CRR)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "udp" -d 'UDP stream with exact loss, reordering, duplication and jitter accounting (iperf3 -u)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "keygen" -d 'Print a new `IDENTITY KEY` line for a `serve --auth-keys` file (32 random bytes, hex)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "lab" -d 'A named testbed of network namespaces (client and server hosts joined by a veth pair, optionally through the link emulator): up, show, exec, down'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "study" -d 'Tests over testbed cells (MTU, offloads, rate, delay/loss, congestion control, sysctls, CPU placement) built on this machine from a study file: run, show'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "mesh" -d 'Tests between many hosts\' daemons (full mesh, star, incast, ring or pairs), never two throughput tests on one host at once; heatmaps per ordered pair'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "plot" -d 'Draw a result (a test\'s or a sweep\'s JSON, or a sweep\'s -o directory) as SVG'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "report" -d 'Write a result as one self-contained HTML page (inline SVG and CSS, opens offline)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "limits" -d 'This machine\'s physical limits in a few seconds: memory copy and checksum bandwidth per buffer size, system call cost, wake-up latency, how fast bytes cross between two CPUs, the loopback TCP ceiling. Cached per boot; stream results are compared with them'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "history" -d 'The results history (every test is saved to a local database unless --no-save): list, show, export, delete, prune, import, compare, regress'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "compare" -d 'Compare result files (A.json B.json, or sets split by `vs`) figure by figure, with statistics: the change, its confidence interval, and whether it is real'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "completions" -d 'Print a shell completion script on stdout, e.g. `wirebench completions bash > /usr/share/bash-completion/completions/wirebench`'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "sweep" -d 'A test over a grid of factor values, each point a complete result, the curves analysed (saturation, n½, dips, Hockney fit, load knee)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and not __fish_seen_subcommand_from serve stream rr crr udp keygen lab study mesh plot report limits history compare completions sweep help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "up" -d 'Build a named lab: namespaces wbl-NAME-c (client, 198.18.0.1) and wbl-NAME-s (server, 198.18.0.2) joined by a veth pair; with impairments through a middle namespace wbl-NAME-m and a background emulator. Every setting is read back'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "show" -d 'Show one lab (read back from the kernel) or list all'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "exec" -d 'Run a command inside the client or server namespace of a lab'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "down" -d 'Remove a lab (its emulator, namespaces and state), all labs, or the stale ones'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from lab" -f -a "_emulate" -d 'The emulator process of a lab (started by `lab up`)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from study" -f -a "run" -d 'Run a study file (or continue one with --resume DIR)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from study" -f -a "show" -d 'Print a study directory\'s tables and expectations'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "list" -d 'Stored results, newest first'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "show" -d 'One stored result, printed as the test printed it (or its JSON with --json)'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "export" -d 'Stored results as JSON (one document, or an array) or CSV rows'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "delete" -d 'Delete one stored result'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "prune" -d 'Delete the results older than DAYS days'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "import" -d 'Store result JSON files and the daemon\'s --records JSON lines'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "compare" -d 'Compare two sets of stored results figure by figure, with statistics'
complete -c wirebench -n "__fish_wirebench_using_subcommand help; and __fish_seen_subcommand_from history" -f -a "regress" -d 'Exit 1 when the newest result (or the candidate set) is significantly worse than the baseline by more than the threshold, 0 otherwise (2: nothing to judge)'
