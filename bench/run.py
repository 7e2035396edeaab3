#!/usr/bin/env python3
"""wirebench against its peers, side by side, with the targets of issue 14 checked.

One portable entry point: it builds its own testbeds, interleaves the tools, measures every
tool's CPU the same way, checks the targets and writes a Markdown report and a JSON file with
every raw run.

TESTBEDS (private network namespaces; the host's sysctls are never touched; a veth client
namespace gets net.ipv4.tcp_tw_reuse=1 so that back-to-back 10,000-flow runs find free ports)
  loopback      one namespace, client and server on 127.0.0.1
  veth-<MTU>    two namespaces joined by a veth pair (10.203.9.1 -> 10.203.9.2), MTU 1500,
                9000, 65520
  Every route in them carries `congctl <cc>` (cubic; the host default may be bbr), so every
  TCP socket of every tool gets it; what each namespace's route says is read back and
  recorded, and the sockets' own algorithm is sampled with `ss -ti` in the middle of each
  first-round stream run. A namespace whose route does not read back <cc> stops the run.

PLACEMENT
  streams   client (sender) pinned to CPU 0, server (receiver) to CPU 1: `taskset` on every
            process, and wirebench also gets `-A 0,1` for its data threads.
  rr        "same": client and server on CPU 0; "split": client CPU 0, server CPU 1.
  With one CPU everything runs on it and the split placement is skipped (said in the report).

VARIANTS (--only takes these keys, or `stream` / `rr`; references are added automatically)
  streams   wb (wirebench default: 1 MiB calls), wb-128k (-l 128K, iperf3's call size),
            wb-Z (-Z, sendfile), wb-zc (the zero-copy pair: --send-path sendfile
            --recv-path discard, the fastest pair in docs/bench/2026-11-21-send-receive-paths.md),
            wb-P10000 (-P 10000 flows; only on loopback and veth-1500; with it, as
            informational rows, wb-P10000-lowat: --notsent-lowat 16K, and wb-P10000-w256k:
            -w 256K, the verdict's two suggestions for many flows), iperf3 (128 KiB
            calls), iperf3-Z, nuttcp (its default 64 KiB), netperf (TCP_STREAM, when
            installed), neper-F1 / neper-F10000 (informational: Google's neper tcp_stream at
            one and 10,000 flows, 256 KiB calls, one thread per end, a fresh server per run;
            where -P 10000 runs, when --neper or `tcp_stream` on PATH names it; neper is not
            a Debian package, so the user builds it).
  rr        wb-rr-tcp, wb-rr-udp (wirebench rr / rr --udp), sockperf-tcp, sockperf-udp
            (sockperf ping-pong --full-rtt), wb-rr-busy (rr --busy-poll, informational, when
            `wirebench rr --help` lists it), netperf-tcp-rr / -udp-rr (when installed),
            neper-rr-tcp (informational: neper's tcp_rr, one flow, a fresh server per run;
            found beside --neper's tcp_stream or on PATH).
            14 bytes each way for every tool (sockperf's minimum).

METHOD
  Each round runs every variant once; the order rotates by one each round and is reversed
  every other round (ABBA for two tools, round-robin for more), so a slow drift of the host
  hits every tool alike. Per variant:
    Gbit/s          median over rounds of the receiver's payload rate (10^9 bit/s), as the
                    tool reports it (wirebench receiver window, iperf3 sum_received, nuttcp
                    rate, netperf THROUGHPUT).
    tx/s            rr: median transactions per second (tool's own window count).
    paired ratio    median over rounds of variant/reference measured in the same round, with
                    the [min-max] of those per-round ratios. References: iperf3 for streams,
                    iperf3 -Z for wirebench -Z, wirebench default for -P 10000, neper -F 1
                    for neper -F 10000, sockperf (same protocol) for rr. Verdicts use this
                    median paired ratio. Where both ran, the report also gives wirebench
                    -P 10000 over neper -F 10000, paired.
    busy cores      (client CPU-s + server CPU-s) / client wall-s, where CPU-s is user+system
                    time of the tool's own processes (all threads): the client's from wait4()'s
                    rusage, the server's as the delta of /proc/PID/stat utime+stime(+cutime+
                    cstime) of the long-lived server process (and any children) over the run.
                    "machine busy" is all CPUs' time over the same interval less the idle
                    time /proc/stat timed (shows load from outside the tools; busy jiffies
                    miss work done between ticks).
    service demand  streams: CPU us per KiB (1024 bytes) delivered, sender = client process,
                    receiver = server process, over the whole process lifetime / all payload
                    bytes the tool says were delivered (warm-up included); identical for every
                    tool. wirebench's own figure (data threads, window) is shown beside it.
                    rr: CPU us per transaction counted in the tool's window.
  Targets (PASS/MISS on the median paired ratio, each path where measured): default stream
  >= 1.10x iperf3; -l 128K >= 1.0x iperf3; -Z >= 1.0x iperf3 -Z; zero-copy pair >= 1.7x
  iperf3; default stream's service demand <= iperf3's at each end (paired ratio <= 1.0);
  rr TCP and UDP >= 1.02x sockperf on the same CPU and >= 1.05x on split CPUs; -P 10000 >=
  1.2x neper's 10,000 flows (needs --neper or tcp_stream on PATH).
  Then, unless --no-host or --only: the rows users run first (bench/host_defaults.py).

OUTPUT
  docs/bench/YYYY-MM-DD-<cpu-slug>[-quick][-<--only>].md and .json (or --out-dir): host, kernel,
  CPUs, tool versions, congestion control read back, load average before and after, command
  line, wirebench commit; the tables; every raw run.
  Exit status: 0 all targets passed, 1 a target missed (or could not be measured), 2 setup
  error (no root, tool or binary missing, testbed or server would not start), 130 interrupted.

USAGE (root; iproute2, taskset, iperf3, sockperf, nuttcp; a release build of wirebench)
  sudo python3 bench/run.py --quick          # < 5 min: loopback + veth-1500, 3 rounds of 2 s
  sudo python3 bench/run.py                  # all paths, 5 rounds of 3 s (~25 min)
  sudo python3 bench/run.py --paths loopback --only wb,wb-Z --rounds 3 --seconds 2
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import host_defaults  # noqa: E402
import run_tools as T  # noqa: E402
from common import SetupError, Testbed, busy_cpu_s, read_proc_stat, run_timed, sh  # noqa: E402
from run_report import targets, write_outputs  # noqa: E402

ALL_PATHS = ["loopback", "veth-1500", "veth-9000", "veth-65520"]
P10K_PATHS = ["loopback", "veth-1500"]
NS_PREFIX = "wbr"
NAN = float("nan")


def med(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else None


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="3 rounds, 2 s runs, loopback + veth-1500 streams, rr on loopback, "
                         "-P 10000 on loopback only (under 5 min on 2 vCPUs)")
    ap.add_argument("--paths", help=f"stream paths, comma-separated, '' for none (default all: "
                                    f"{','.join(ALL_PATHS)}; --quick loopback,veth-1500)")
    ap.add_argument("--rr-paths", help="rr paths, '' for none (default all, --quick loopback)")
    ap.add_argument("--p10000-paths", help="paths for -P 10000 (default loopback,veth-1500; "
                                           "--quick loopback)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 5, --quick 3)")
    ap.add_argument("--seconds", type=float, help="seconds per stream run (default 3, --quick 2)")
    ap.add_argument("--rr-seconds", type=int,
                    help="seconds per rr run, whole (sockperf -t; default 3, --quick 2)")
    ap.add_argument("--only", default="", help="comma-separated variant keys, or stream / rr")
    ap.add_argument("--out-dir", help="where the .md and .json go (default docs/bench/)")
    ap.add_argument("--cc", default="cubic", help="congestion control on every route (cubic)")
    ap.add_argument("--no-host", action="store_true",
                    help="skip the host-default rows (host loopback, host congestion control, "
                         "no pinning, separate daemons; bench/host_defaults.py)")
    ap.add_argument("--zc-pair", default=" ".join(T.ZC_PAIR),
                    help="wirebench arguments of the zero-copy pair (default: %(default)s)")
    ap.add_argument("--neper", metavar="PATH",
                    help="neper's tcp_stream binary for the informational neper rows "
                         "(default: `tcp_stream` on PATH; none: the rows are skipped)")
    ap.add_argument("--rerender", metavar="RUN.json",
                    help="only rewrite the Markdown report (and JSON summary) of an earlier run "
                         "from its JSON file, next to it unless --out-dir is given")
    args = ap.parse_args(argv)
    q = args.quick
    def paths(given, default):  # "" (given empty) means none
        return [p for p in (default if given is None else given).split(",") if p]

    args.paths = paths(args.paths, "loopback,veth-1500" if q else ",".join(ALL_PATHS))
    args.rr_paths = paths(args.rr_paths, "loopback" if q else ",".join(ALL_PATHS))
    args.p10000_paths = paths(args.p10000_paths, "loopback" if q else ",".join(P10K_PATHS))
    args.rounds = args.rounds or (3 if q else 5)
    args.seconds = args.seconds or (2.0 if q else 3.0)
    args.rr_seconds = args.rr_seconds or (2 if q else 3)
    args.zc_pair = args.zc_pair.split()
    if args.neper and not os.access(args.neper, os.X_OK):
        ap.error(f"--neper {args.neper}: not an executable file")
    T.NEPER = args.neper or shutil.which("tcp_stream")
    beside = os.path.join(os.path.dirname(T.NEPER), "tcp_rr") if T.NEPER else ""
    T.NEPER_RR = beside if os.access(beside, os.X_OK) else shutil.which("tcp_rr")
    for p in args.paths + args.rr_paths + args.p10000_paths:
        if p != "loopback" and not (p.startswith("veth-") and p[5:].isdigit()):
            ap.error(f"unknown path {p!r}: loopback or veth-<MTU>")
    if args.rounds < 1 or args.seconds <= 0 or args.rr_seconds < 1:
        ap.error("--rounds >= 1, --seconds > 0, --rr-seconds >= 1")
    return args


def select(args, notes):
    """The stream and rr variant keys to run, references added."""
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(T.STREAM_VARIANTS) - set(T.RR_VARIANTS) - {"stream", "rr"}
    if unknown:
        raise SetupError(f"--only: unknown {sorted(unknown)}; keys: "
                         f"{', '.join(list(T.STREAM_VARIANTS) + list(T.RR_VARIANTS))}, stream, rr")

    def want(key, group):
        return not only or key in only or group in only

    st = [k for k in T.STREAM_VARIANTS if want(k, "stream")]
    rr = [k for k in T.RR_VARIANTS if want(k, "rr")]
    if not T.have_netperf():
        notes.append("netperf: not installed, skipped")
        st = [k for k in st if k != "netperf"]
        rr = [k for k in rr if not k.startswith("netperf")]
    else:
        notes.append("netperf: installed, included (informational rows)")
    neper = [k for k in st if T.STREAM_VARIANTS[k][1] == "neper"]
    if neper and not T.NEPER:
        notes.append("neper: tcp_stream not found (--neper PATH or on PATH), its rows skipped")
        st = [k for k in st if k not in neper]
    elif neper:
        notes.append(f"neper: {T.NEPER}, included (informational rows, --p10000-paths only)")
    if "neper-rr-tcp" in rr:
        if T.NEPER_RR:
            notes.append(f"neper: {T.NEPER_RR}, included (informational rr row)")
        else:
            notes.append("neper: tcp_rr not found (beside --neper's tcp_stream or on PATH), "
                         "its rr row skipped")
            rr.remove("neper-rr-tcp")
    if not shutil.which("nuttcp") and "nuttcp" in st:
        notes.append("nuttcp: not installed, skipped")
        st.remove("nuttcp")
    if "wb-rr-busy" in rr:
        if "--busy-poll" in T.wb_help("rr"):
            notes.append("wirebench rr --busy-poll: available, measured as an informational row "
                         "(not a target)")
        else:
            notes.append("wirebench rr --busy-poll: unavailable in this build (not in "
                         "`wirebench rr --help`), row skipped")
            rr.remove("wb-rr-busy")
    for table, keys in ((T.STREAM_VARIANTS, st), (T.RR_VARIANTS, rr)):
        for k in list(keys):
            ref = table[k][3]
            while ref and ref not in keys:
                keys.append(ref)
                ref = table[ref][3]
    order = list(T.STREAM_VARIANTS) + list(T.RR_VARIANTS)
    return sorted(st, key=order.index), sorted(rr, key=order.index)


def is_p10000(key):
    """The variants run only on --p10000-paths: wirebench's -P 10000 ones (the target's and
    the informational ones) and neper's pair."""
    return key.startswith("wb-P10000") or key.startswith("neper-")


def rotated(keys, i):
    k = i % len(keys)
    order = keys[k:] + keys[:k]
    return order[::-1] if i % 2 else order


# Measured per-run overheads (s) beyond the run's own length, for the time estimate.
OVERHEAD = {"wb": 0.1, "iperf3": 0.1, "nuttcp": 0.1, "netperf": 0.5, "sockperf": 2.3, "neper": 1.0,
            "wb-P10000": 1.5, "wb-rr": 0.5}


def estimate(args, st, rr, cpus2):
    total = 0.0
    for p in args.paths:
        for k in st:
            if is_p10000(k) and p not in args.p10000_paths:
                continue
            tool = T.STREAM_VARIANTS[k][1]
            extra = OVERHEAD["wb-P10000"] if is_p10000(k) else OVERHEAD.get(k, OVERHEAD[tool])
            total += args.rounds * (args.seconds + extra + 0.3)
        total += 3
    places = 2 if cpus2 else 1
    for p in args.rr_paths:
        for k in rr:
            tool = T.RR_VARIANTS[k][1]
            total += places * args.rounds * (args.rr_seconds + OVERHEAD.get(
                "wb-rr" if tool == "wb" else tool) + 0.3)
        total += 2 * places
    if not args.no_host and not args.only:
        total += len(host_defaults.ROWS) * args.rounds * (args.seconds + 1.0) + 2
    return total


def cc_seen(ns, port_hint=None):
    """The congestion control names of this namespace's established TCP sockets (ss -ti)."""
    out = sh("ip", "netns", "exec", ns, "ss", "-Htin", "state", "established", check=False,
             timeout=10).stdout
    names = set()
    for tok in out.split():
        if tok in ("cubic", "bbr", "bbr2", "bbr3", "reno", "dctcp", "htcp", "vegas", "westwood",
                   "bic", "highspeed", "hybla", "illinois", "lp", "nv", "scalable", "veno", "yeah"):
            names.add(tok)
    return sorted(names)


def measure(argv, server, timeout, nofile=False, observe=None, observe_at=None):
    """Run one client; return (Timed, server CPU-s, machine busy CPU-s) over its run."""
    s0 = server.cpu_s() if server else 0.0
    b0 = read_proc_stat()
    out = run_timed(argv, timeout, nofile=nofile, during=observe, during_at=observe_at)
    b1 = read_proc_stat()
    s1 = server.cpu_s() if server else 0.0
    return out, max(0.0, s1 - s0), busy_cpu_s(b0, b1)


def stream_path(tb, args, keys, runs, log):
    servers = T.start_servers(tb, T.STREAM_CPUS[1], {T.STREAM_VARIANTS[k][1] for k in keys})
    try:
        for i in range(args.rounds):
            line = []
            for key in rotated(keys, i):
                label, tool, _, _ = T.STREAM_VARIANTS[key]
                argv = T.stream_cmd(tb, key, args.seconds, args.zc_pair)
                rec = {"kind": "stream", "path": tb.name, "variant": key, "round": i,
                       "command": " ".join(argv)}
                seen = {}
                obs = (lambda: seen.update(cc=sorted({c for ns in tb.nss for c in cc_seen(ns)}))
                       ) if i == 0 else None
                dead = [s.name for s in servers.values() if not s.alive()]
                if dead:
                    raise SetupError(f"{tb.name}: server(s) died: {dead}")
                own = None  # a server for this run only (neper serves one test)
                try:
                    if tool == "neper":
                        own = T.neper_server(tb, key, args.seconds)
                    out, srv_cpu, machine = measure(
                        argv, own or servers[T.server_for(tool)],
                        args.seconds + (240 if is_p10000(key) else 60),
                        nofile=is_p10000(key), observe=obs,
                        observe_at=0.3 + args.seconds * 0.4 + (1.5 if is_p10000(key) else 0))
                    if own:
                        srv_cpu = T.neper_server_cpu_s(own)
                    rec.update(wall_s=out.wall_s, cpu_client_s=out.cpu_s, cpu_server_s=srv_cpu,
                               machine_busy_cores=machine / out.wall_s, rc=out.returncode)
                    if out.timed_out:
                        raise RuntimeError(f"timed out after {out.wall_s:.0f} s (killed)")
                    rec.update(T.STREAM_PARSERS[tool](out))
                    kib = rec["bytes"] / T.KIB
                    rec["busy_cores"] = (out.cpu_s + srv_cpu) / out.wall_s
                    rec["sd_snd"] = out.cpu_s * 1e6 / kib if kib else None
                    rec["sd_rcv"] = srv_cpu * 1e6 / kib if kib else None
                    rec["cc_sockets"] = seen.get("cc")
                    rec["ok"] = True
                    if out.stderr.strip() and tool == "wb":
                        rec["stderr"] = out.stderr.strip()[-400:]
                    line.append(f"{key} {rec['gbps']:.1f}")
                except (RuntimeError, ValueError, KeyError, TypeError,
                        subprocess.TimeoutExpired) as e:
                    rec.update(ok=False, error=str(e)[:600])
                    log(f"  {tb.name} round {i + 1} {key}: FAILED: {str(e)[:300]}")
                finally:
                    if own:
                        own.stop()
                runs.append(rec)
                time.sleep(0.3)
            log(f"  {tb.name} round {i + 1}/{args.rounds} Gbit/s: " + ", ".join(line))
    finally:
        for s in servers.values():
            s.stop()


def rr_path(tb, args, keys, runs, log, places):
    tools = {T.RR_VARIANTS[k][1] for k in keys}
    protos = sorted({T.RR_VARIANTS[k][2] for k in keys if T.RR_VARIANTS[k][1] == "sockperf"})
    for place in places:
        servers = T.start_servers(tb, T.PLACEMENTS[place][1], tools, protos)
        try:
            for i in range(args.rounds):
                line = []
                for key in rotated(keys, i):
                    label, tool, proto, _ = T.RR_VARIANTS[key]
                    argv = T.rr_cmd(tb, key, args.rr_seconds, place)
                    rec = {"kind": "rr", "path": tb.name, "placement": place, "variant": key,
                           "round": i, "command": " ".join(argv)}
                    dead = [s.name for s in servers.values() if not s.alive()]
                    if dead:
                        raise SetupError(f"{tb.name} {place}: server(s) died: {dead}")
                    own = None  # neper serves one test: a server for this run only
                    try:
                        if tool == "neper":
                            own = T.neper_rr_server(tb, T.PLACEMENTS[place][1], args.rr_seconds)
                        out, srv_cpu, machine = measure(
                            argv, own or servers[T.server_for(tool, proto)], args.rr_seconds + 60)
                        if own:
                            srv_cpu = T.neper_server_cpu_s(own)
                        rec.update(wall_s=out.wall_s, cpu_client_s=out.cpu_s,
                                   cpu_server_s=srv_cpu, machine_busy_cores=machine / out.wall_s,
                                   rc=out.returncode)
                        if out.timed_out:
                            raise RuntimeError(f"timed out after {out.wall_s:.0f} s (killed)")
                        rec.update(T.RR_PARSERS[tool](out))
                        n = rec["transactions_total"]
                        rec["busy_cores"] = (out.cpu_s + srv_cpu) / out.wall_s
                        rec["sd_tx_client"] = out.cpu_s * 1e6 / n if n else None
                        rec["sd_tx_server"] = srv_cpu * 1e6 / n if n else None
                        rec["ok"] = True
                        line.append(f"{key} {rec['tps'] / 1e3:.1f}k")
                    except (RuntimeError, ValueError, KeyError, TypeError,
                            subprocess.TimeoutExpired) as e:
                        rec.update(ok=False, error=str(e)[:600])
                        log(f"  {tb.name} {place} round {i + 1} {key}: FAILED: {str(e)[:300]}")
                    finally:
                        if own:
                            own.stop()
                    runs.append(rec)
                    time.sleep(0.3)
                log(f"  {tb.name} rr {place} round {i + 1}/{args.rounds} tx/s: " + ", ".join(line))
        finally:
            for s in servers.values():
                s.stop()


def host_facts():
    b = read_proc_stat()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu_model": common.cpu_model(),
        "kernel": os.uname().release,
        "cpus_online": os.cpu_count(),
        "cpus_usable": sorted(os.sched_getaffinity(0)),
        "host_default_cc": open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip(),
        "loadavg_before": common.loadavg(),
        "proc_stat_busy_start": b,
        "wirebench_commit": common.git_commit(),
        "wirebench_binary": common.WB,
        "wirebench_binary_mtime": datetime.datetime.fromtimestamp(
            os.path.getmtime(common.WB)).isoformat(timespec="seconds"),
        "versions": {
            "wirebench": common.tool_version([common.WB, "--version"]),
            "iperf3": common.tool_version(["iperf3", "--version"]),
            "sockperf": common.tool_version(["sockperf", "--version"]) if shutil.which("sockperf") else "not installed",
            "nuttcp": common.tool_version(["nuttcp", "-V"]) if shutil.which("nuttcp") else "not installed",
            "netperf": common.tool_version(["netperf", "-V"]) if T.have_netperf() else "not installed",
            "neper": common.tool_version([T.NEPER, "-v", "--nolog"]) if T.NEPER else "not found",
            "python": sys.version.split()[0],
        },
    }


def rerender(args):
    with open(args.rerender) as f:
        doc = json.load(f)
    doc.pop("summary", None)
    args.out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.rerender))
    md_path, json_path, text = write_outputs(doc, args)
    print(f"rewritten: {md_path}\n           {json_path}")
    return 0


def main():
    args = parse_args()
    if args.rerender:
        return rerender(args)
    common.install_signal_handlers()
    t_start = time.monotonic()
    notes = []
    snap_dir = None

    def log(msg):
        print(msg, flush=True)

    try:
        if os.geteuid() != 0:
            raise SetupError("needs root (network namespaces)")
        if not os.path.exists(common.WB):
            raise SetupError(f"{common.WB} missing: cargo build --release -p wirebench")
        for tool in ("ip", "taskset", "ss", "iperf3"):
            if not shutil.which(tool):
                raise SetupError(f"{tool} not on PATH")
        st, rr = select(args, notes)
        if rr and args.rr_paths and not shutil.which("sockperf"):
            raise SetupError("sockperf not on PATH (needed for the rr reference)")
        cpus = sorted(os.sched_getaffinity(0))
        cpus2 = len(cpus) >= 2
        c0, c1 = cpus[0], cpus[1] if cpus2 else cpus[0]
        T.STREAM_CPUS = (c0, c1)
        T.PLACEMENTS = {"same": (c0, c0), "split": (c0, c1)}
        places = ["same", "split"] if cpus2 else ["same"]
        if not cpus2:
            notes.append(f"only one usable CPU ({c0}): streams run client and server on it, "
                         "the split rr placement is skipped; figures are not comparable with "
                         "2-CPU runs")
        for ns in common.stale_namespaces(NS_PREFIX):
            sh("ip", "netns", "del", ns, check=False)
            notes.append(f"deleted a stale namespace of an earlier killed run: {ns}")
        facts = host_facts()
        # The Rust crates may be rebuilt while this runs: measure one snapshot of the binary.
        snap_dir = tempfile.mkdtemp(prefix="wbrun-")
        snap = os.path.join(snap_dir, "wirebench")
        shutil.copy2(common.WB, snap)
        with open(snap, "rb") as f:
            facts["wirebench_sha256"] = hashlib.sha256(f.read()).hexdigest()[:16]
        common.WB = T.WB = snap
    except (SetupError, OSError) as e:
        print(f"setup error: {e}", file=sys.stderr)
        if snap_dir:
            shutil.rmtree(snap_dir, ignore_errors=True)
        return 2

    est = estimate(args, st, rr, cpus2)
    log(f"wirebench vs peers: {'quick' if args.quick else 'full'} mode; stream paths "
        f"{','.join(args.paths)}; rr paths {','.join(args.rr_paths)}; {args.rounds} rounds, "
        f"{args.seconds:g} s streams, {args.rr_seconds} s rr; cc {args.cc} on every route "
        f"(host default {facts['host_default_cc']}, untouched)")
    log(f"stream variants: {', '.join(st)}\nrr variants: {', '.join(rr)}")
    for n in notes:
        log("note: " + n)
    log(f"CPUs: streams client {T.STREAM_CPUS[0]} / server {T.STREAM_CPUS[1]}; load average "
        f"{facts['loadavg_before']}; estimated {est / 60:.1f} min")

    runs, readback, status = [], {}, "completed"
    host_section = None
    rc = 0
    try:
        for pname in dict.fromkeys(args.paths + args.rr_paths):
            keys_st = [k for k in st if pname in args.paths
                       and (not is_p10000(k) or pname in args.p10000_paths)]
            keys_rr = rr if pname in args.rr_paths else []
            if not keys_st and not keys_rr:
                continue
            tb = Testbed(pname, args.cc, prefix=NS_PREFIX)
            try:
                info = tb.readback()
                readback[pname] = info
                log(f"[{pname}] congestion control read back: " + "; ".join(
                    f"{ns}: route congctl {d['route_congctl']}, ns default {d['ns_default_cc']}"
                    + (f", mtu {d['mtu']}" if d.get("mtu") else "")
                    + f", tcp_tw_reuse {d.get('tcp_tw_reuse')}" for ns, d in info.items()))
                if not tb.cc_ok(info):
                    raise SetupError(f"{pname}: a route does not carry congctl {args.cc}: {info}")
                if keys_st:
                    stream_path(tb, args, keys_st, runs, log)
                if keys_rr:
                    rr_path(tb, args, keys_rr, runs, log, places)
            finally:
                tb.close()
        if not args.no_host and not args.only:
            host_section = host_defaults.run(args.rounds, args.seconds, log)
    except SetupError as e:
        print(f"setup error: {e}", file=sys.stderr)
        status, rc = f"setup error: {e}", 2
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e or 'SIGINT'}): servers stopped, namespaces deleted",
              file=sys.stderr)
        status, rc = f"interrupted ({e or 'SIGINT'})", 130
    finally:
        shutil.rmtree(snap_dir, ignore_errors=True)
    facts["loadavg_after"] = common.loadavg()
    b1 = read_proc_stat()
    b0 = facts.pop("proc_stat_busy_start")
    facts["machine_busy_cores_whole_run"] = (busy_cpu_s(b0, b1) / (b1[1] - b0[1])
                                             if b1[1] > b0[1] else None)
    elapsed = time.monotonic() - t_start
    checks = targets(runs, args) if runs else []
    missed = [c for c in checks if c["verdict"] != "PASS"]
    doc = {"status": status, "elapsed_s": elapsed, "estimated_s": est, "mode":
           "quick" if args.quick else "full", "command_line": " ".join([sys.executable] + sys.argv),
           "config": {k: v for k, v in vars(args).items()}, "host": facts,
           "cc_readback": readback, "notes": notes, "stream_variants": st, "rr_variants": rr,
           "placements": {k: list(v) for k, v in T.PLACEMENTS.items() if k in places},
           "stream_cpus": list(T.STREAM_CPUS), "targets": checks, "runs": runs,
           "host_defaults": host_section}
    md_path, json_path, text = write_outputs(doc, args)
    print("\n" + text)
    print(f"\nwritten: {md_path}\n         {json_path}\ntook {elapsed / 60:.1f} min "
          f"(estimated {est / 60:.1f})")
    if rc:
        return rc
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
