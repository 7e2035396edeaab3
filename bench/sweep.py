#!/usr/bin/env python3
"""Message-size sweep side by side: `wirebench sweep stream` vs NetPIPE (NPtcp) vs a loop of
iperf3 runs, one per size. Reports how long each tool takes to sweep the range and how well
the throughput-vs-size curves agree. A benchmark, not a test: nothing here passes or fails.

Paths, built fresh in private network namespaces (names `wbsw-<pid>-...`) whose routes carry
`congctl <cc>` (cubic by default), so every TCP connection of every tool runs that congestion
control whatever the host default is, without touching the host (as bench/stream.py does):
  loopback   one namespace, client and server on 127.0.0.1 (its local routes carry congctl)
  veth       two namespaces joined by a veth pair, MTU 1500, 10.213.0.1 (client) and
             10.213.0.2 (server); the /24 route on each side carries congctl
Every client is pinned to CPU 0 and every server to CPU 1 with `taskset -c` (`ip netns exec`
and `taskset` both exec, so the PID we hold is the tool's own). Each tool keeps its default
socket buffers (kernel autotuning; NPtcp without -b sets none).

Sizes: a geometric range --lo..--hi with --ppo points per doubling (default 64 B .. 4 MiB, 2
per octave). The list is the one wirebench reports for `--msg-size LO..HI --points-per-octave
N --perturb 0` (its SweepResult `factors`, msg_size values); iperf3 gets those sizes
explicitly. NPtcp picks its own sizes inside -l/-u (with -p 0: 2^k and 1.5*2^k, so the powers
of two coincide with wirebench's and the points between differ: 1.5x vs 1.414x).

The three tools (all talk to their own server in the server namespace):
  wirebench  `wirebench sweep stream -H ADDR -p PORT -C <cc> --msg-size LO..HI
             --points-per-octave N --perturb 0 -t T --no-remeasure --json` against
             `wirebench serve` (with --allow-unauthenticated on the veth path: the namespace is
             private to this run). Figure per size: the point's `figure.throughput_bps`
             (payload bits/s read at the receiver over the point's T-second window); the size is
             the point's `settings` entry whose factor is msg_size (`-C` makes `congestion` a
             one-value factor too, so it is looked up by name, not position). Congestion control:
             each point's `result.runs[0].summary.congestion`.
  iperf3     one `iperf3 -c ADDR -p PORT -l SIZE -t T -J -C <cc>` per size, back to back as a
             shell loop would, against `iperf3 -s`. Figure: `end.sum_received.bits_per_second`
             (receiver side). Congestion control: `end.sender_tcp_congestion` /
             `receiver_tcp_congestion`. iperf3 refuses -l above 1 MiB (its maximum block size),
             so larger sizes are reported n/a and left out of its curve and of the ratios. -t is
             whole seconds for iperf3 (--seconds is rounded up for it).
  NPtcp      receiver `NPtcp -P PORT -p 0 -l LO -u HI` (server CPU), transmitter `NPtcp -h ADDR
             ...same options... -o FILE` (client CPU), a fresh receiver per sweep. NPtcp is a
             PING-PONG, not a stream: each size is bounced back and forth (a few trials of
             repeated round trips, the FASTEST trial kept, where the other tools report the
             whole window) and its throughput is size*8 / (round trip / 2). Only one message
             is ever in flight, so it pays a full round trip per message: far below a stream
             at small and mid sizes (no pipelining, no coalescing of small writes); at large
             sizes the round trip is amortised and its figure approaches, and on a noisy host
             can exceed, a single stream's. Figure: column 2 of
             its output file ("Mbps", which NetPIPE computes as bits / (t * 1024 * 1024), so
             bit/s = Mbps * 2^20), cross-checked against bytes * 8 / column 3 (t = half round
             trip, seconds). It has no duration flag; it also stops by itself once one block
             takes more than 1 s. Congestion control is not reported by NPtcp: it is read with
             `ss -ti` on its established sockets while it runs.

Rounds: --rounds R (default 2). Round 0 runs wirebench, iperf3, NPtcp; round 1 the reverse
order; and so on alternately, so a drift of the host hits every tool alike. The wirebench and
iperf3 servers stay up for the whole path; NPtcp's receiver is started per sweep.

Figures, per path:
  wall s          wall-clock time of the tool's whole sweep (process start of the first run to
                  exit of the last; for iperf3 the whole loop of processes, for NPtcp from the
                  receiver's start to the transmitter's exit); median over rounds. With the
                  point length T fixed, (wall - points*T)/points is the per-point overhead.
  curve           the per-size median over rounds of each tool's throughput.
  peak            the highest point of that median curve and its size (each tool over the sizes
                  it measured: iperf3 only up to 1 MiB, NPtcp over its own sizes).
  peak ratio      wirebench peak / the peer's peak.
  pointwise       median over the common sizes of wirebench / peer at each size: iperf3 at the
                  same sizes; NPtcp interpolated linearly in log(size) between its two
                  neighbouring sizes (exact at the sizes both measure, no extrapolation).
                  The per-round paired values (round i against round i) follow in brackets.
  unstable sizes  sizes where a tool's rounds differ by more than 25 % (bimodal or drifting
                  host), listed so the medians can be read with them in mind.
Also printed: CPU model (/proc/cpuinfo "model name"), kernel, the host's and the namespaces'
default congestion control, each tool's version, the commands, the 1-minute load average
before and after each sweep, and (from wirebench's per-point CPU report) how busy the whole
machine was against wirebench's own threads: on a shared VM other work shows up there.
--json OUT writes the configuration, every round's per-size curve of every tool, wirebench's
per-point CPU context and warning codes, and the summary.

Defaults take about 5-6 minutes (2 paths x 2 rounds x ~36 s wirebench + ~30 s iperf3 +
~10-20 s NPtcp). Needs root (network namespaces), iproute2, taskset, iperf3, NPtcp (Debian
package netpipe-tcp) and a release build (cargo build --release). Usage:
  sudo python3 bench/sweep.py [--rounds 2] [--paths loopback,veth] [--lo 64] [--hi 4M]
                              [--ppo 2] [--seconds 1] [--cc cubic] [--json OUT]
"""

import argparse
import bisect
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_model, loopback_congctl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WB = os.environ.get("WIREBENCH_BIN", os.path.join(ROOT, "target", "release", "wirebench"))
PREFIX = "wbsw-"
CLIENT_ADDR, SERVER_ADDR, SUBNET = "10.213.0.1", "10.213.0.2", "10.213.0.0/24"
CLIENT_CPU, SERVER_CPU = 0, 1
# Ports inside the private namespaces: nothing else listens there (checked before use).
PORTS = {"wirebench": 47401, "nptcp": 47402, "iperf3": 47403}
IPERF3_MAX_LEN = 1 << 20  # iperf3: "block size too large (maximum = 1048576 bytes)"
TOOLS = ["wirebench", "iperf3", "nptcp"]
LABEL = {"wirebench": "wirebench", "iperf3": "iperf3 loop", "nptcp": "NPtcp (ping-pong)"}
UNSTABLE_SPREAD = 0.25
NAN = float("nan")
CC_NAMES = r"\b(cubic|bbr|bbr2|bbr3|reno|dctcp|htcp|vegas|westwood|illinois|bic|highspeed|hybla|scalable|veno|yeah|lp|nv|cdg)\b"


def sh(*args, check=True, timeout=30, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def parse_size(s):
    """64, 4K, 4M (1024^n), as wirebench takes them."""
    t = s.strip().lower().removesuffix("ib").removesuffix("b")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    return int(t[:-1] if mult > 1 else t) * mult


def fmt_size(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10}K"
    return str(n)


def geometric_fallback(lo, hi, ppo):
    """Only if wirebench cannot report its list: round(lo * 2^(k/N)) (halves away from zero),
    deduplicated, plus hi (wirebench-stats `geometric`'s definition)."""
    out, k = [lo], 1
    while True:
        x = lo * 2 ** (k / ppo)
        if x > hi:
            break
        v = min(int(math.floor(x + 0.5)), hi)
        if v > out[-1]:
            out.append(v)
        k += 1
    if out[-1] < hi:
        out.append(hi)
    return out




def read_cc(ns=None):
    pre = ["ip", "netns", "exec", ns] if ns else []
    try:
        return sh(*pre, "cat", "/proc/sys/net/ipv4/tcp_congestion_control").stdout.strip()
    except Exception as e:  # reported, not fatal
        return f"? ({e})"


def version(argv):
    try:
        out = sh(*argv, check=False)
        return (out.stdout + out.stderr).strip().splitlines()[0]
    except Exception as e:
        return f"? ({e})"


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return NAN


def med(xs):
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    return statistics.median(xs) if xs else NAN


# ───────────── paths ─────────────

class Path:
    """Private namespaces for one path; routes carry congctl <cc> (bench/stream.py's way)."""

    def __init__(self, name, cc):
        self.name, self.nss = name, []
        tag = f"{PREFIX}{os.getpid()}"
        try:
            if name == "loopback":
                self.nss = [f"{tag}-lo"]
                self.client_ns = self.server_ns = self.nss[0]
                self.server_addr = "127.0.0.1"
                self._add_ns(self.nss[0])
            elif name == "veth":
                self.nss = [f"{tag}-c", f"{tag}-s"]
                self.client_ns, self.server_ns = self.nss
                self.server_addr = SERVER_ADDR
                for ns in self.nss:
                    self._add_ns(ns)
                ifc, ifs = f"wbsw{os.getpid()}c"[-15:], f"wbsw{os.getpid()}s"[-15:]
                # Created straight into the namespaces: no name ever exists on the host.
                sh("ip", "link", "add", ifc, "netns", self.client_ns, "type", "veth",
                   "peer", "name", ifs, "netns", self.server_ns)
                for ns, ifn, addr in ((self.client_ns, ifc, CLIENT_ADDR),
                                      (self.server_ns, ifs, SERVER_ADDR)):
                    sh("ip", "-n", ns, "link", "set", ifn, "mtu", "1500")
                    sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", ifn)
                    sh("ip", "-n", ns, "link", "set", ifn, "up")
                    # Both ends' sockets (the accepted ones too) look up this route.
                    sh("ip", "-n", ns, "route", "replace", SUBNET, "dev", ifn, "proto", "kernel",
                       "scope", "link", "src", addr, "congctl", cc)
            else:
                raise ValueError(f"unknown path {name!r} (loopback, veth)")
            for ns in self.nss:
                loopback_congctl(ns, cc)
        except BaseException:
            self.close()
            raise

    def _add_ns(self, ns):
        sh("ip", "netns", "add", ns)
        self.nss_created = getattr(self, "nss_created", []) + [ns]
        sh("ip", "-n", ns, "link", "set", "lo", "up")

    def close(self):
        for ns in getattr(self, "nss_created", []):
            sh("ip", "netns", "del", ns, check=False)
        self.nss_created = []

    def client(self, *argv):
        return ["ip", "netns", "exec", self.client_ns, "taskset", "-c", str(CLIENT_CPU), *argv]

    def server(self, *argv):
        return ["ip", "netns", "exec", self.server_ns, "taskset", "-c", str(SERVER_CPU), *argv]

    def listening(self, port):
        out = sh("ip", "netns", "exec", self.server_ns, "ss", "-Hnlt", f"sport = :{port}",
                 check=False).stdout
        return bool(out.strip())


class Server:
    """A server process we started; stopped by its own PID only."""

    def __init__(self, name, argv, path, port, cwd=None, log=None):
        self.name, self.argv = name, argv
        if path.listening(port):
            raise RuntimeError(f"port {port} already in use in {path.server_ns}")
        self.log = open(log, "w") if log else None
        self.p = subprocess.Popen(argv, stdout=self.log or subprocess.DEVNULL,
                                  stderr=subprocess.STDOUT if self.log else subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL, cwd=cwd)
        deadline = time.monotonic() + 5
        while not path.listening(port):
            if self.p.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{name} server did not come up: {' '.join(argv)}")
            time.sleep(0.02)

    def alive(self):
        return self.p.poll() is None

    def stop(self, grace=5):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        if self.log:
            self.log.close()
            self.log = None


# ───────────── tools ─────────────

def wb_server_argv(path):
    """`serve` refuses a non-loopback bind without keys unless told: the veth namespaces are
    private to this run, so it runs unauthenticated there (as bench/stream.py does)."""
    auth = [] if path.server_addr.startswith("127.") else ["--allow-unauthenticated"]
    return path.server(WB, "serve", "--bind", path.server_addr, "--port", str(PORTS["wirebench"]),
                       *auth)


def wb_argv(path, args):
    return path.client(WB, "sweep", "stream", "-H", path.server_addr, "-p", str(PORTS["wirebench"]),
                       "-C", args.cc, "--msg-size", f"{args.lo}..{args.hi}",
                       "--points-per-octave", str(args.ppo), "--perturb", "0",
                       "-t", f"{args.seconds:g}", "--no-remeasure", "--json")


def run_wirebench(path, args, n_expected):
    argv = wb_argv(path, args)
    t0 = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         timeout=60 + n_expected * (args.seconds + 10))
    wall = time.monotonic() - t0
    try:
        doc = json.loads(out.stdout)
    except ValueError:
        raise RuntimeError(f"rc={out.returncode}, no JSON; stderr: {out.stderr.strip()[-300:]}")
    sizes = next((f["values"] for f in doc.get("factors", []) if f["name"] == "msg_size"), [])
    curve, cc, failed, dur, extras = {}, set(), [], set(), []
    for p in doc.get("points", []):
        if p.get("role") != "grid":
            continue
        size = next(s["value"] for s in p["settings"] if s["factor"] == "msg_size")
        fig = p.get("figure")
        if not fig or fig.get("kind") != "throughput":
            failed.append(size)
            continue
        curve[size] = fig["throughput_bps"]
        dur.add(p.get("duration_ms"))
        for r in p["result"].get("runs", []):
            cc.update(r.get("summary", {}).get("congestion") or [])
        # Context for odd points: how busy the host was (wirebench's own CPU report: the
        # whole machine vs its own threads) and the run's warning codes.
        summ = (p["result"].get("runs") or [{}])[0].get("summary", {})
        cpu = {c.get("host"): c for c in summ.get("cpu") or []}
        host = (cpu.get("client") or {}).get("system") or {}
        extras.append({
            "size": size, "bps": fig["throughput_bps"],
            "host_busy_pct": host.get("busy_pct"), "host_steal_pct": host.get("steal_pct"),
            "client_threads_pct": (cpu.get("client") or {}).get("threads_util_pct_of_one_cpu"),
            "server_threads_pct": (cpu.get("server") or {}).get("threads_util_pct_of_one_cpu"),
            "warnings": sorted({w.get("code") for w in summ.get("warnings") or []
                                if isinstance(w, dict)} - {None}),
        })
    errors = []
    if doc.get("status") != "completed":
        errors.append(f"status {doc.get('status')}: {doc.get('error')}")
    if failed:
        errors.append(f"points without a figure: {failed}")
    th = next((a.get("throughput") for a in doc.get("analysis", []) if a.get("throughput")), None)
    return {"wall_s": wall, "curve": curve, "sizes": sizes, "cc": sorted(cc), "errors": errors,
            "point_ms": sorted(d for d in dur if d is not None), "points": extras,
            "own_analysis": {k: th.get(k) for k in ("peak_bps", "peak_size_bytes",
                                                    "saturation_bps", "knee_size_bytes")}
            if th else None}


def iperf3_server_argv(path):
    return path.server("iperf3", "-s", "-B", path.server_addr, "-p", str(PORTS["iperf3"]))


def iperf3_argv(path, args, size):
    return path.client("iperf3", "-c", path.server_addr, "-p", str(PORTS["iperf3"]), "-l",
                       str(size), "-t", str(args.iperf3_t), "-J", "-C", args.cc)


def run_iperf3(path, args, sizes):
    curve, cc, errors, skipped, retries = {}, set(), [], [], 0
    t0 = time.monotonic()
    for size in sizes:
        if size > IPERF3_MAX_LEN:
            skipped.append(size)
            continue
        for attempt in (0, 1):
            try:
                out = subprocess.run(iperf3_argv(path, args, size), capture_output=True,
                                     text=True, stdin=subprocess.DEVNULL,
                                     timeout=args.iperf3_t + 30)
                r = json.loads(out.stdout)
            except (ValueError, subprocess.TimeoutExpired) as e:
                r = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            if r.get("error") and attempt == 0 and "busy" in r["error"]:
                retries += 1  # the server still closing the previous test: one retry
                time.sleep(0.2)
                continue
            break
        if r.get("error"):
            errors.append(f"{size}: {r['error']}")
            continue
        end = r["end"]
        curve[size] = end["sum_received"]["bits_per_second"]
        for k in ("sender_tcp_congestion", "receiver_tcp_congestion"):
            if end.get(k):
                cc.add(f"{k.split('_')[0]}:{end[k]}")
    wall = time.monotonic() - t0
    return {"wall_s": wall, "curve": curve, "cc": sorted(cc), "errors": errors,
            "skipped_over_1MiB": skipped, "busy_retries": retries}


def nptcp_opts(args):
    return ["-P", str(PORTS["nptcp"]), "-p", "0", "-l", str(args.lo), "-u", str(args.hi)]


def nptcp_tx_argv(path, args, outfile):
    return path.client("NPtcp", "-h", path.server_addr, *nptcp_opts(args), "-o", outfile)


def sample_cc(ns, port, stop, found):
    """Poll `ss -ti` in `ns` for established sockets on `port` until one names its cc."""
    time.sleep(0.3)
    while not stop.is_set():
        ss = sh("ip", "netns", "exec", ns, "ss", "-Htin", "state", "established",
                f"( sport = :{port} or dport = :{port} )", check=False).stdout
        algos = sorted(set(re.findall(CC_NAMES, ss)))
        if algos:
            n = sum(1 for ln in ss.splitlines() if ln.strip() and not ln[0].isspace())
            found.append(f"{','.join(algos)} (ss -ti, {n} socket(s))")
            return
        stop.wait(0.3)


def run_nptcp(path, args, tmpdir, tag):
    outfile = os.path.join(tmpdir, f"np-{tag}.out")
    t0 = time.monotonic()
    rx = Server("NPtcp receiver", path.server("NPtcp", *nptcp_opts(args)), path, PORTS["nptcp"],
                cwd=tmpdir, log=os.path.join(tmpdir, f"np-{tag}.rx.log"))
    stop, found = threading.Event(), []
    th = threading.Thread(target=sample_cc, args=(path.client_ns, PORTS["nptcp"], stop, found),
                          daemon=True)
    try:
        th.start()
        out = subprocess.run(nptcp_tx_argv(path, args, outfile), capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, cwd=tmpdir, timeout=args.nptcp_timeout)
        wall = time.monotonic() - t0
    finally:
        stop.set()
        th.join(5)
        try:
            rx.p.wait(10)  # the receiver ends with the test
        except subprocess.TimeoutExpired:
            pass
        rx.stop(grace=2)
    errors = [] if out.returncode == 0 else [f"rc={out.returncode}: {out.stderr.strip()[-300:]}"]
    curve, mismatch = {}, 0
    try:
        with open(outfile) as f:
            for line in f:
                cols = line.split()
                if len(cols) < 3:
                    continue
                size, mbps, t_half = int(cols[0]), float(cols[1]), float(cols[2])
                bps = mbps * 1024 * 1024  # NetPIPE: bps = bits / (t * 1024 * 1024)
                if t_half > 0 and abs(size * 8 / t_half / bps - 1) > 0.02:
                    mismatch += 1  # t is printed to 10 ns: only a gross disagreement counts
                curve[size] = bps
    except OSError as e:
        errors.append(f"no output file: {e}")
    if mismatch:
        errors.append(f"{mismatch} rows where Mbps*2^20 and bytes*8/t disagree by >2 %")
    return {"wall_s": wall, "curve": curve, "errors": errors,
            "cc": found or ["? (no established socket seen by ss)"]}


# ───────────── analysis ─────────────

def interp_logsize(curve, x):
    """Throughput at size x, linear in log(size) between the neighbouring measured sizes."""
    xs = sorted(curve)
    if not xs or x < xs[0] or x > xs[-1]:
        return None
    i = bisect.bisect_left(xs, x)
    if xs[i] == x:
        return curve[x]
    a, b = xs[i - 1], xs[i]
    f = (math.log(x) - math.log(a)) / (math.log(b) - math.log(a))
    return curve[a] + f * (curve[b] - curve[a])


def median_curve(runs):
    sizes = sorted({s for r in runs for s in r["curve"]})
    return {s: med([r["curve"].get(s) for r in runs]) for s in sizes}


def peak(curve):
    if not curve:
        return NAN, None
    s = max(curve, key=lambda k: curve[k])
    return curve[s], s


def pointwise(wb, peer, sizes, interpolate):
    ratios = []
    for s in sizes:
        w = wb.get(s)
        p = interp_logsize(peer, s) if interpolate else peer.get(s)
        if w and p:
            ratios.append(w / p)
    return ratios


def unstable(runs):
    out = []
    sizes = sorted({s for r in runs for s in r["curve"]})
    for s in sizes:
        vs = [r["curve"][s] for r in runs if s in r["curve"]]
        if len(vs) >= 2 and max(vs) > 0 and (max(vs) - min(vs)) / max(vs) > UNSTABLE_SPREAD:
            out.append((s, [round(v / 1e9, 2) for v in vs]))
    return out


def summarize(pname, runs, sizes, args):
    """runs[tool] = list of (round, result)."""
    row = {"path": pname, "tools": {}, "rounds": {t: [r for _, r in runs[t]] for t in TOOLS}}
    curves = {t: median_curve([r for _, r in runs[t]]) for t in TOOLS}
    for t in TOOLS:
        rs = [r for _, r in runs[t]]
        pk, at = peak(curves[t])
        row["tools"][t] = {
            "rounds_ok": len(rs), "wall_s": med([r["wall_s"] for r in rs]),
            "wall_s_rounds": [round(r["wall_s"], 2) for r in rs],
            "points": len(curves[t]), "peak_bps": pk, "peak_size": at,
            "peak_bps_rounds": [peak(r["curve"])[0] for r in rs],
            "cc": sorted({c for r in rs for c in r["cc"]}),
            "unstable": unstable(rs), "median_curve": curves[t],
        }
    wbp = row["tools"]["wirebench"]["peak_bps"]
    for t, interp in (("iperf3", False), ("nptcp", True)):
        d = row["tools"][t]
        d["peak_ratio"] = wbp / d["peak_bps"] if ok(d["peak_bps"]) else NAN
        pr = pointwise(curves["wirebench"], curves[t], sizes, interp)
        d["pointwise_median"], d["pointwise_n"] = med(pr), len(pr)
        paired = []
        for i, w in runs["wirebench"]:
            o = [r for j, r in runs[t] if j == i]
            if o:
                paired.append(med(pointwise(w["curve"], o[0]["curve"], sizes, interp)))
        d["pointwise_paired_rounds"] = paired
        # wirebench's peak over the sizes the peer covers (iperf3 stops at 1 MiB)
        lo_p, hi_p = (min(curves[t]), max(curves[t])) if curves[t] else (0, -1)
        d["wb_peak_in_peer_range"] = peak({s: v for s, v in curves["wirebench"].items()
                                           if lo_p <= s <= hi_p})
    return row


# ───────────── main ─────────────

def on_sigterm(*_):
    raise KeyboardInterrupt("SIGTERM")


def ok(x):
    """A usable number: not None, not NaN, not zero."""
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and x != 0


def gbps(x):
    return f"{x / 1e9:.2f}" if ok(x) else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="rounds, tool order alternating (default 2)")
    ap.add_argument("--paths", default="loopback,veth", help="loopback,veth (default both)")
    ap.add_argument("--lo", default="64", help="smallest message size (default 64; K/M = 1024^n)")
    ap.add_argument("--hi", default="4M", help="largest message size (default 4M)")
    ap.add_argument("--ppo", type=int, default=2, help="points per octave (default 2)")
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="length of each point: wirebench -t, iperf3 -t (rounded up; default 1)")
    ap.add_argument("--cc", default="cubic", help="congestion control on the routes and -C (default cubic)")
    ap.add_argument("--nptcp-timeout", type=float, default=600, help="bound of one NPtcp sweep, s")
    ap.add_argument("--json", dest="json_out", metavar="OUT", help="write raw data and summary as JSON")
    args = ap.parse_args()
    args.lo, args.hi = parse_size(args.lo), parse_size(args.hi)
    args.iperf3_t = max(1, math.ceil(args.seconds))
    paths = [p for p in args.paths.split(",") if p]
    if set(paths) - {"loopback", "veth"} or not paths:
        sys.exit("--paths: loopback,veth")
    if not 1 <= args.lo <= args.hi or args.ppo < 1 or args.rounds < 1 or args.seconds <= 0:
        sys.exit("need 1 <= --lo <= --hi, --ppo >= 1, --rounds >= 1, --seconds > 0")
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    if not os.path.exists(WB):
        sys.exit(f"{WB} missing: run cargo build --release")
    for tool in ("iperf3", "NPtcp", "taskset", "ip", "ss"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not on PATH" + (" (apt-get install -y netpipe-tcp)" if tool == "NPtcp" else ""))
    if (os.cpu_count() or 1) < 2:
        sys.exit("needs 2 CPUs (client on CPU 0, server on CPU 1)")
    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    info = {
        "cpu_model": cpu_model(), "cpus": os.cpu_count(), "kernel": platform.release(),
        "host_default_cc": read_cc(), "wirebench": version([WB, "--version"]),
        "iperf3": version(["iperf3", "--version"]),
        "nptcp": version(["dpkg-query", "-W", "-f", "netpipe-tcp ${Version}", "netpipe-tcp"]),
    }
    guess = geometric_fallback(args.lo, args.hi, args.ppo)
    n_ip = sum(1 for s in guess if s <= IPERF3_MAX_LEN)
    est = len(paths) * args.rounds * (len(guess) * (args.seconds + 0.1)
                                      + n_ip * (args.iperf3_t + 0.1) + 20)
    print(f"message-size sweep {fmt_size(args.lo)}..{fmt_size(args.hi)}, {args.ppo}/octave "
          f"(~{len(guess)} sizes), {args.seconds:g} s per point, {args.rounds} rounds, paths "
          f"{','.join(paths)}; estimated {est / 60:.1f} min", flush=True)
    print(f"CPU: {info['cpu_model']} x{info['cpus']}; kernel {info['kernel']}; host default cc "
          f"{info['host_default_cc']}; namespaces: routes congctl {args.cc}", flush=True)
    print(f"{info['wirebench']}; {info['iperf3']}; {info['nptcp']}", flush=True)

    tmpdir = tempfile.mkdtemp(prefix=PREFIX)
    rows, raw, sizes, checks = [], {}, None, {}
    t_start = time.monotonic()
    try:
        for pname in paths:
            path, servers = None, []
            runs = {t: [] for t in TOOLS}
            raw[pname] = {t: [] for t in TOOLS}
            try:
                path = Path(pname, args.cc)
                checks[f"{pname}_namespace_default_cc"] = read_cc(path.client_ns)
                servers.append(Server("wirebench", wb_server_argv(path), path, PORTS["wirebench"]))
                servers.append(Server("iperf3", iperf3_server_argv(path), path, PORTS["iperf3"]))
                for i in range(args.rounds):
                    for t in (TOOLS if i % 2 == 0 else TOOLS[::-1]):
                        dead = [s.name for s in servers if not s.alive()]
                        if dead:
                            raise RuntimeError(f"server(s) died: {dead}")
                        load_before = loadavg()
                        try:
                            if t == "wirebench":
                                r = run_wirebench(path, args, len(sizes or guess))
                                if sizes is None and r["sizes"]:
                                    sizes = list(r["sizes"])
                                elif r["sizes"] and r["sizes"] != sizes:
                                    r["errors"].append("size list differs from the first sweep's")
                            elif t == "iperf3":
                                if sizes is None:
                                    print("  wirebench reported no size list yet: iperf3 uses the "
                                          "computed geometric list", file=sys.stderr)
                                r = run_iperf3(path, args, sizes or guess)
                            else:
                                r = run_nptcp(path, args, tmpdir, f"{pname}-{i}")
                        except (RuntimeError, subprocess.TimeoutExpired, KeyError, ValueError,
                                OSError) as e:  # a failed sweep is reported, not hidden
                            print(f"  [{pname} round {i}] {t}: failed: {e}", file=sys.stderr,
                                  flush=True)
                            raw[pname][t].append({"round": i, "failed": str(e)})
                            continue
                        r["round"] = i
                        r["loadavg_1m"] = [load_before, loadavg()]
                        runs[t].append((i, r))
                        raw[pname][t].append({k: v for k, v in r.items() if k != "sizes"})
                        pk, at = peak(r["curve"])
                        print(f"  [{pname} round {i}] {LABEL[t]:18s} {r['wall_s']:6.1f} s  "
                              f"{len(r['curve']):2d} points  peak {gbps(pk)} Gbit/s at "
                              f"{fmt_size(at) if at else '-'}  cc {','.join(r['cc'])}  "
                              f"load {r['loadavg_1m'][0]:.1f}->{r['loadavg_1m'][1]:.1f}"
                              + (f"  errors: {r['errors']}" if r["errors"] else ""), flush=True)
                        time.sleep(0.5)
                rows.append(summarize(pname, runs, sizes or guess, args))
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                print(f"[{pname}] path failed: {e}", file=sys.stderr, flush=True)
                checks[f"{pname}_failed"] = str(e)
            finally:
                for s in servers:
                    s.stop()
                if path:
                    path.close()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    elapsed = time.monotonic() - t_start
    sizes = sizes or guess

    print(f"\nMessage-size sweep {fmt_size(args.lo)}..{fmt_size(args.hi)}, {args.ppo} points/octave "
          f"({len(sizes)} sizes), {args.seconds:g} s per point (iperf3 -t {args.iperf3_t}), "
          f"{args.rounds} rounds (order alternating), client CPU 0, server CPU 1, routes congctl "
          f"{args.cc}. CPU: {info['cpu_model']} x{info['cpus']}; kernel {info['kernel']}. "
          f"Took {elapsed / 60:.1f} min.")
    print("Gbit/s = 10^9 bit/s of payload. wall = median whole-sweep time. peak = top of the "
          "per-size median curve. pointwise = median over common sizes of wirebench/peer "
          "(NPtcp interpolated on log size). NPtcp is a ping-pong (one message in flight, "
          "throughput = size / half round trip), NOT a stream: its curve is expected to differ.\n")
    head = ("| path | tool | wall s | points | peak Gbit/s @ size | wb/tool peak ratio "
            "| median pointwise wb/tool [per round] | congestion control seen |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for row in rows:
        for t in TOOLS:
            d = row["tools"][t]
            at = fmt_size(d["peak_size"]) if d["peak_size"] else "-"
            if t == "wirebench":
                ratio = pw = ""
            else:
                ratio = f"{d['peak_ratio']:.2f}x"
                rng = ", ".join(f"{x:.2f}" for x in d["pointwise_paired_rounds"])
                pw = f"{d['pointwise_median']:.2f}x over {d['pointwise_n']} sizes [{rng}]"
            print(f"| {row['path']} | {LABEL[t]} | {d['wall_s']:.1f} | {d['points']} | "
                  f"{gbps(d['peak_bps'])} @ {at} | {ratio} | {pw} | {', '.join(d['cc']) or '?'} |")

    for row in rows:
        tl = row["tools"]
        c = {t: tl[t]["median_curve"] for t in TOOLS}
        print(f"\n{row['path']}: per-size median Gbit/s (NPtcp interpolated on log size; * = a size "
              f"NPtcp measured)")
        print("| size | wirebench | iperf3 | NPtcp | wb/iperf3 | wb/NPtcp |")
        print("|---|---|---|---|---|---|")
        for s in sizes:
            w, i3, np_ = c["wirebench"].get(s), c["iperf3"].get(s), interp_logsize(c["nptcp"], s)
            r1 = f"{w / i3:.2f}" if w and i3 else ""
            r2 = f"{w / np_:.2f}" if w and np_ else ""
            star = "*" if s in c["nptcp"] else ""
            print(f"| {fmt_size(s)} | {gbps(w)} | {gbps(i3) if s <= IPERF3_MAX_LEN else 'n/a (>1M)'} "
                  f"| {gbps(np_)}{star} | {r1} | {r2} |")
        for t in ("iperf3", "nptcp"):
            pk, at = tl[t]["wb_peak_in_peer_range"]
            print(f"  wirebench peak within {LABEL[t]}'s size range: {gbps(pk)} Gbit/s at "
                  f"{fmt_size(at) if at else '-'} (ratio {pk / tl[t]['peak_bps']:.2f}x)"
                  if ok(tl[t]["peak_bps"]) and ok(pk) else f"  {LABEL[t]}: no data")
        for t in TOOLS:
            pts = tl[t]["points"]
            per = (tl[t]["wall_s"] - pts * (args.seconds if t == "wirebench" else args.iperf3_t)) / pts \
                if pts and t != "nptcp" else None
            print(f"  {LABEL[t]}: wall per round {tl[t]['wall_s_rounds']} s"
                  + (f", overhead {per * 1e3:.0f} ms per point beyond -t" if per is not None else "")
                  + f"; peak per round {[gbps(x) for x in tl[t]['peak_bps_rounds']]} Gbit/s")
            if t == "wirebench":
                pts_x = [x for r in row["rounds"]["wirebench"] for x in r.get("points", [])]
                if pts_x:
                    print("    host context from wirebench's own CPU report, median over its points: "
                          f"machine busy {med([x['host_busy_pct'] for x in pts_x]):.0f} % (all CPUs), "
                          f"steal {med([x['host_steal_pct'] for x in pts_x]):.1f} %, its client "
                          f"threads {med([x['client_threads_pct'] for x in pts_x]):.0f} % and server "
                          f"threads {med([x['server_threads_pct'] for x in pts_x]):.0f} % of one CPU")
            if tl[t]["unstable"]:
                worst = sorted(tl[t]["unstable"], key=lambda u: min(u[1]) / max(u[1]))[:8]
                print(f"    {len(tl[t]['unstable'])} of {pts} sizes have rounds differing by "
                      f">{UNSTABLE_SPREAD:.0%} (Gbit/s per round), the widest: "
                      + "; ".join(f"{fmt_size(s)} {v}" for s, v in sorted(worst)))
    print("\nchecks:", checks)
    print("commands (<pid> and FILE are per invocation):")
    cmds = {pname: commands(pname, args) for pname in paths}
    for pname, c in cmds.items():
        for k, v in c.items():
            print(f"  {pname} {k}: {v}")
    if args.json_out:
        doc = {"config": {k: v for k, v in vars(args).items()}, "info": info, "checks": checks,
               "commands": cmds,
               "elapsed_s": elapsed, "sizes": sizes, "wirebench_bin": WB,
               "summary": [{"path": r["path"], "tools": {t: {k: (v if k != "median_curve" else
                                                                 {str(s): x for s, x in v.items()})
                                                             for k, v in d.items()}
                                                         for t, d in r["tools"].items()}}
                           for r in rows],
               "raw": {p: {t: [{k: (v if k != "curve" else {str(s): x for s, x in v.items()})
                                for k, v in r.items()} for r in rs]
                           for t, rs in d.items()} for p, d in raw.items()}}
        tmp = args.json_out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, default=str)
        os.replace(tmp, args.json_out)
        print(f"\nJSON written to {args.json_out}")


class _Demo(Path):
    """A path's names without creating anything, to print the commands as run."""

    def __init__(self, name):  # deliberately not Path.__init__: no namespace is created
        self.name = name
        tag = f"{PREFIX}<pid>"
        if name == "loopback":
            self.client_ns = self.server_ns = f"{tag}-lo"
            self.server_addr = "127.0.0.1"
        else:
            self.client_ns, self.server_ns = f"{tag}-c", f"{tag}-s"
            self.server_addr = SERVER_ADDR


def commands(pname, args):
    d = _Demo(pname)
    j = " ".join
    return {
        "wirebench server": j(wb_server_argv(d)),
        "wirebench": j(wb_argv(d, args)),
        "iperf3 server": j(iperf3_server_argv(d)),
        "iperf3 (one per size)": j(iperf3_argv(d, args, "SIZE")),
        "NPtcp receiver": j(d.server("NPtcp", *nptcp_opts(args))),
        "NPtcp transmitter": j(nptcp_tx_argv(d, args, "FILE")),
    }


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        # `finally` blocks have stopped our servers (by PID) and deleted the namespaces;
        # subprocess.run killed the client it was running.
        sys.exit(f"\ninterrupted ({str(e) or 'SIGINT'}): servers stopped, namespaces deleted")
