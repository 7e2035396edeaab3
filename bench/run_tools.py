"""The tools bench/run.py compares: their variants, command lines, servers and output parsers.

Every runner returns a dict with the tool's own figure ("gbps" or "tps"), the payload bytes or
transactions that figure counts, and whatever the tool reports about itself; bench/run.py adds
the process CPU times it measures identically for every tool.
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import WB, Proc, in_ns, listening  # noqa: E402
from rr import parse_sockperf  # noqa: E402  (sockperf pp --full-rtt output)

KIB = 1024.0
STREAM_CPUS = (0, 1)  # client (sender), server (receiver)
PLACEMENTS = {"same": (0, 0), "split": (0, 1)}  # rr: name -> (client CPU, server CPU)
RR_SIZE = 14  # bytes each way: sockperf's minimum, used by every tool
RR_WARMUP = 0.4  # wirebench --warmup; sockperf drops its own 0.4 s warm-up

PORTS = {"wb": 5301, "iperf3": 5201, "nuttcp": 5000, "netperf": 12865,
         "sockperf-tcp": 11111, "sockperf-udp": 11112, "neper": 12866, "neper-data": 12867}

# neper's tcp_stream and tcp_rr (github.com/google/neper; not a Debian package: built by the
# user; tcp_stream named with --neper or found on PATH, tcp_rr beside it or on PATH); None:
# their rows are skipped.
NEPER = None
NEPER_RR = None
# neper's read and write size, both ends: wirebench's default call size at 10,000 flows.
NEPER_CALL = 262144

# The best zero-copy pair: in docs/bench/2026-11-21-send-receive-paths.md (all paths, 5 rounds) the fastest
# variants were `--recv-path discard` (1.97-2.85x iperf3) and `-Z --recv-path discard`
# (1.93-2.60x); of the pairs where both ends avoid the copy, sendfile + discard was the fastest
# (splice + splice 1.47-2.10x). --zc-pair overrides it.
ZC_PAIR = ["--send-path", "sendfile", "--recv-path", "discard"]

# key -> (label, tool, extra arguments, reference for the paired ratio)
STREAM_VARIANTS = {
    "iperf3": ("iperf3 (128 KiB)", "iperf3", [], None),
    "iperf3-Z": ("iperf3 -Z", "iperf3", ["-Z"], None),
    "wb": ("wirebench default", "wb", [], "iperf3"),
    "wb-128k": ("wirebench -l 128K", "wb", ["-l", "128K"], "iperf3"),
    "wb-Z": ("wirebench -Z", "wb", ["-Z"], "iperf3-Z"),
    "wb-zc": ("wirebench zero-copy pair", "wb", ZC_PAIR, "iperf3"),
    "wb-P10000": ("wirebench -P 10000", "wb", ["-P", "10000"], "wb"),
    # Informational (no target): the two experiments the verdict suggests for 10,000 flows.
    "wb-P10000-lowat": ("wirebench -P 10000 --notsent-lowat 16K (info)", "wb",
                        ["-P", "10000", "--notsent-lowat", "16K"], "wb"),
    "wb-P10000-w256k": ("wirebench -P 10000 -w 256K (info)", "wb",
                        ["-P", "10000", "-w", "256K"], "wb"),
    # Informational: Google's many-flow tool (epoll threads, like wirebench's many-flow engine)
    # at one flow and at 10,000, same 256 KiB calls, one thread per end; run where -P 10000 is.
    "neper-F1": ("neper tcp_stream -F 1 (info)", "neper", ["-F", "1"], None),
    "neper-F10000": ("neper tcp_stream -F 10000 (info)", "neper", ["-F", "10000"], "neper-F1"),
    "nuttcp": ("nuttcp (64 KiB)", "nuttcp", [], "iperf3"),
    "netperf": ("netperf TCP_STREAM", "netperf", [], "iperf3"),
}
RR_VARIANTS = {
    "sockperf-tcp": ("sockperf pp TCP", "sockperf", "tcp", None),
    "sockperf-udp": ("sockperf pp UDP", "sockperf", "udp", None),
    "wb-rr-tcp": ("wirebench rr TCP", "wb", "tcp", "sockperf-tcp"),
    "wb-rr-udp": ("wirebench rr --udp", "wb", "udp", "sockperf-udp"),
    "wb-rr-busy": ("wirebench rr --busy-poll (info)", "wb", "tcp", "sockperf-tcp"),
    # Informational: neper's tcp_rr, one flow and one thread (it waits in epoll_wait).
    "neper-rr-tcp": ("neper tcp_rr (info)", "neper", "tcp", "sockperf-tcp"),
    "netperf-tcp-rr": ("netperf TCP_RR", "netperf", "tcp", "sockperf-tcp"),
    "netperf-udp-rr": ("netperf UDP_RR", "netperf", "udp", "sockperf-udp"),
}


def have_netperf():
    return bool(shutil.which("netperf") and shutil.which("netserver"))


def wb_help(sub):
    from common import sh
    r = sh(WB, sub, "--help", check=False)
    return r.stdout + r.stderr


def serve_auth_args(tb):
    """`serve` refuses a non-loopback bind without keys unless told: the namespaces are
    private to this run, so the test daemon runs without authentication there."""
    return [] if tb.server_addr.startswith("127.") else ["--allow-unauthenticated"]


# ───────────── servers ─────────────

def start_servers(tb, cpu, tools, rr_protos=()):
    """One server per tool in the server namespace, pinned to `cpu`; returns {name: Proc}."""
    ns, addr = tb.server_ns, tb.server_addr
    servers = {}
    try:
        if "wb" in tools:
            servers["wb"] = Proc("wirebench serve", in_ns(
                ns, cpu, WB, "serve", "--bind", addr, "--port", str(PORTS["wb"]),
                "--max-flows", "10000", "--max-connections", "10100",
                "--max-conns-per-source", "20100", "--max-handshakes", "12000",
                *serve_auth_args(tb)), ready=lambda: listening(ns, PORTS["wb"]), nofile=True)
        if "iperf3" in tools:
            servers["iperf3"] = Proc("iperf3 -s", in_ns(ns, cpu, "iperf3", "-s", "-B", addr, "-p",
                                                        str(PORTS["iperf3"])),
                                     ready=lambda: listening(ns, PORTS["iperf3"]))
        if "nuttcp" in tools:
            # --nofork: the one process serves every test in turn (its CPU is all in its PID).
            servers["nuttcp"] = Proc("nuttcp -S", in_ns(ns, cpu, "nuttcp", "-S", "--nofork",
                                                        "-P", str(PORTS["nuttcp"])),
                                     ready=lambda: listening(ns, PORTS["nuttcp"]))
        if "netperf" in tools:
            servers["netperf"] = Proc("netserver", in_ns(ns, cpu, "netserver", "-D", "-L", addr,
                                                         "-p", str(PORTS["netperf"])),
                                      ready=lambda: listening(ns, PORTS["netperf"]))
        if "sockperf" in tools:
            for proto in rr_protos:
                port = PORTS[f"sockperf-{proto}"]
                servers[f"sockperf-{proto}"] = Proc(
                    f"sockperf sr {proto}",
                    in_ns(ns, cpu, "sockperf", "sr", *(["--tcp"] if proto == "tcp" else []),
                          "-i", addr, "-p", str(port)),
                    ready=lambda port=port, proto=proto: listening(ns, port, proto == "udp"))
    except BaseException:
        for s in servers.values():
            s.stop()
        raise
    return servers


def neper_server(tb, key, secs):
    """neper serves one test and exits, so every neper run gets its own server (pinned like
    the others), ready when its control port listens."""
    c, s = STREAM_CPUS
    flows = STREAM_VARIANTS[key][2][1]
    return Proc("neper tcp_stream server", in_ns(
        tb.server_ns, s, NEPER, "-F", flows, "-T", "1", "-B", str(NEPER_CALL),
        "-l", f"{secs:g}", "-C", str(PORTS["neper"]), "-P", str(PORTS["neper-data"]),
        "--nolog"), ready=lambda: listening(tb.server_ns, PORTS["neper"]), nofile=True)


def neper_rr_server(tb, cpu, secs):
    """A tcp_rr server for one run (neper serves one test), pinned to `cpu`."""
    return Proc("neper tcp_rr server", in_ns(
        tb.server_ns, cpu, NEPER_RR, "-F", "1", "-T", "1", "-Q", str(RR_SIZE), "-R",
        str(RR_SIZE), "-l", f"{secs:g}", "-C", str(PORTS["neper"]), "-P",
        str(PORTS["neper-data"]), "--nolog"),
        ready=lambda: listening(tb.server_ns, PORTS["neper"]))


def _neper_kv(text):
    """neper prints its results as `key=value` lines; the numeric ones."""
    return dict(re.findall(r"^(\w+)=([-\d.]+)$", text, re.M))


def neper_server_cpu_s(server, timeout=30):
    """The neper server's whole-life CPU seconds, from the rusage it prints as it exits
    (utime_end + stime_end, getrusage(RUSAGE_SELF): all its threads). Raises RuntimeError
    when it printed none (the caller stops the server)."""
    try:
        server.p.wait(timeout=timeout)
    except Exception:  # noqa: BLE001 (TimeoutExpired)
        raise RuntimeError(f"the neper server did not exit within {timeout} s of its client")
    kv = _neper_kv(server.output())
    if "utime_end" not in kv or "stime_end" not in kv:
        raise RuntimeError("the neper server printed no rusage: "
                           + server.output().strip()[-300:])
    return float(kv["utime_end"]) + float(kv["stime_end"])


def server_for(tool, proto=None):
    return f"sockperf-{proto}" if tool == "sockperf" else tool


# ───────────── streams ─────────────

def stream_cmd(tb, key, secs, zc_pair=None):
    label, tool, extra, _ = STREAM_VARIANTS[key]
    if key == "wb-zc" and zc_pair:
        extra = zc_pair
    c, s = STREAM_CPUS
    ns, addr = tb.client_ns, tb.server_addr
    if tool == "wb":
        return in_ns(ns, c, WB, "stream", "-H", addr, "-p", str(PORTS["wb"]), "-t", f"{secs:g}",
                     "--json", "-A", f"{c},{s}", *extra)
    if tool == "iperf3":
        return in_ns(ns, c, "iperf3", "-c", addr, "-p", str(PORTS["iperf3"]), "-t", f"{secs:g}",
                     "-J", *extra)
    if tool == "nuttcp":
        return in_ns(ns, c, "nuttcp", "-P", str(PORTS["nuttcp"]), f"-T{secs:g}", "-fparse", addr)
    if tool == "neper":
        return in_ns(ns, c, NEPER, "-c", "-H", addr, "-C", str(PORTS["neper"]), "-P",
                     str(PORTS["neper-data"]), *extra, "-T", "1", "-B", str(NEPER_CALL), "-l",
                     f"{secs:g}", "--nolog")
    if tool == "netperf":
        return in_ns(ns, c, "netperf", "-H", addr, "-p", str(PORTS["netperf"]), "-l",
                     str(max(1, round(secs))), "-P", "0", "-t", "TCP_STREAM", "--", "-o",
                     "THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME")
    raise ValueError(key)


def _json(text, what):
    try:
        return json.loads(text)
    except ValueError:
        raise RuntimeError(f"{what}: no JSON in its output: {text.strip()[-300:]}")


def parse_wb_stream(out):
    r = _json(out.stdout, "wirebench")
    if r.get("status") != "completed":
        err = r.get("error") or {}
        raise RuntimeError(f"wirebench status {r.get('status')}: "
                           f"{err.get('message', err) if isinstance(err, dict) else err}; "
                           f"stderr: {out.stderr.strip()[-200:]}")
    run = r["runs"][-1]
    s = run["summary"]
    dirs = s["workload"]["stream"]["directions"]  # RunResult schema 3
    cpu = {c["host"]: c for c in s.get("cpu") or []}
    flows = []
    for end in ("client", "server"):
        try:
            flows += run[end]["data"]["stream"]["flows"]
        except (KeyError, TypeError):
            pass
    fallbacks = sorted({json.dumps(f["path_fallback"]) for f in flows if f.get("path_fallback")})
    engines = sorted({json.dumps(run[e].get("engine")) for e in ("client", "server")
                      if isinstance(run.get(e), dict) and run[e].get("engine")})
    return {
        "gbps": sum(d["receiver_throughput_bps"] for d in dirs) / 1e9,
        "bytes": sum(d.get("receiver_total_bytes", d["receiver_bytes"]) for d in dirs),
        "window_bytes": sum(d["receiver_bytes"] for d in dirs),
        "flows": sum(d.get("flows", 0) for d in dirs),
        "cc_reported": ",".join(s.get("congestion") or []),
        "send_paths": sorted({str(p) for d in dirs for p in d.get("send_paths") or []}),
        "recv_paths": sorted({str(p) for d in dirs for p in d.get("recv_paths") or []}),
        "fallback_flows": sum(d.get("path_fallback_flows", 0) or 0 for d in dirs),
        "fallbacks": fallbacks[:5],
        "engines": engines,
        "flow_errors": sum(1 for f in flows if f.get("error")),
        "retransmits": sum(d.get("retransmits", 0) or 0 for d in dirs),
        # wirebench's own check of its receivers' intervals: the rate changed during the run
        # (slowest interval at most half the fastest), e.g. the host moved the vCPUs.
        "rate_varied": [w["params"] for w in s.get("warnings") or []
                        if w.get("code") == "rate_varied"],
        "wb_sd_snd_system": cpu.get("client", {}).get("service_demand_us_per_kb"),
        "wb_sd_rcv_system": cpu.get("server", {}).get("service_demand_us_per_kb"),
        "wb_sd_snd_threads": cpu.get("client", {}).get("threads_service_demand_us_per_kb"),
        "wb_sd_rcv_threads": cpu.get("server", {}).get("threads_service_demand_us_per_kb"),
    }


def parse_iperf3(out):
    r = _json(out.stdout, "iperf3")
    if "error" in r:
        raise RuntimeError(f"iperf3: {r['error']}")
    end = r["end"]
    rcv = end["sum_received"]
    cpu = end.get("cpu_utilization_percent", {})
    return {
        "gbps": rcv["bits_per_second"] / 1e9,
        "bytes": rcv["bytes"],
        "cc_reported": end.get("receiver_tcp_congestion", end.get("sender_tcp_congestion", "?")),
        "retransmits": end.get("sum_sent", {}).get("retransmits"),
        "iperf3_cpu_pct_host": cpu.get("host_total"),
        "iperf3_cpu_pct_remote": cpu.get("remote_total"),
    }


def parse_nuttcp(out):
    kv = dict(re.findall(r"(\w+)=([-\d.]+)", out.stdout))
    if "rate_Mbps" not in kv:
        raise RuntimeError(f"nuttcp rc={out.returncode}: {(out.stdout + out.stderr).strip()[-300:]}")
    return {
        "gbps": float(kv["rate_Mbps"]) / 1e3,
        "bytes": float(kv["megabytes"]) * 1024 * 1024,
        "retransmits": int(float(kv["retrans"])) if "retrans" in kv else None,
        "nuttcp_tx_cpu_pct": float(kv.get("tx_cpu", "nan")),
        "nuttcp_rx_cpu_pct": float(kv.get("rx_cpu", "nan")),
        "cc_reported": None,
    }


def parse_netperf_stream(out):
    lines = [ln for ln in out.stdout.strip().splitlines() if ln.strip()]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"netperf rc={out.returncode}: {(out.stdout + out.stderr).strip()[-300:]}")
    val, unit, secs = lines[-1].split(",")[:3]
    scale = {"10^6bits/s": 1e-3, "10^9bits/s": 1.0, "10^3bits/s": 1e-6}.get(unit.strip(), 1e-3)
    gbps = float(val) * scale
    return {"gbps": gbps, "bytes": gbps * 1e9 / 8 * float(secs), "cc_reported": None}


def parse_neper(out):
    """The client prints the server's (receiver's) rate as remote_throughput, bit/s: bytes read
    between the receiver's first and last 1 s samples over that time, so connection setup is
    outside its window (wirebench's receiver window starts at its first byte). neper prints no
    byte count, so the bytes (for service demand) are that rate over its test length, as for
    netperf."""
    kv = _neper_kv(out.stdout)
    if out.returncode != 0 or "remote_throughput" not in kv:
        raise RuntimeError(f"neper rc={out.returncode}: {(out.stdout + out.stderr).strip()[-300:]}")
    gbps = float(kv["remote_throughput"]) / 1e9
    secs = float(kv.get("total_run_time", "nan"))
    return {"gbps": gbps, "bytes": gbps * 1e9 / 8 * secs, "cc_reported": None}


STREAM_PARSERS = {"wb": parse_wb_stream, "iperf3": parse_iperf3, "nuttcp": parse_nuttcp,
                  "netperf": parse_netperf_stream, "neper": parse_neper}


# ───────────── request/response ─────────────

def rr_cmd(tb, key, secs, place):
    label, tool, proto, _ = RR_VARIANTS[key]
    c, s = PLACEMENTS[place]
    ns, addr = tb.client_ns, tb.server_addr
    if tool == "wb":
        argv = [WB, "rr", "-H", addr, "-p", str(PORTS["wb"]), "-t", f"{secs:g}", "--warmup",
                f"{RR_WARMUP:g}", "--json", "--request-size", str(RR_SIZE), "--response-size",
                str(RR_SIZE), "-A", f"{c},{s}"]
        if proto == "udp":
            argv.append("--udp")
        if key == "wb-rr-busy":
            argv.append("--busy-poll")
        return in_ns(ns, c, *argv)
    if tool == "sockperf":
        # sockperf's -t takes whole seconds.
        return in_ns(ns, c, "sockperf", "pp", "-i", addr, "-p", str(PORTS[f"sockperf-{proto}"]),
                     "-m", str(RR_SIZE), "-t", str(max(1, round(secs))), "--full-rtt",
                     *(["--tcp"] if proto == "tcp" else []))
    if tool == "neper":
        return in_ns(ns, c, NEPER_RR, "-c", "-H", addr, "-C", str(PORTS["neper"]), "-P",
                     str(PORTS["neper-data"]), "-F", "1", "-T", "1", "-Q", str(RR_SIZE), "-R",
                     str(RR_SIZE), "-l", f"{secs:g}", "--nolog")
    if tool == "netperf":
        return in_ns(ns, c, "netperf", "-H", addr, "-p", str(PORTS["netperf"]), "-l",
                     str(max(1, round(secs))), "-P", "0", "-t",
                     "TCP_RR" if proto == "tcp" else "UDP_RR", "--", "-r", f"{RR_SIZE},{RR_SIZE}",
                     "-o", "THROUGHPUT,P50_LATENCY,P99_LATENCY,MEAN_LATENCY,ELAPSED_TIME")
    raise ValueError(key)


def parse_wb_rr(out):
    r = _json(out.stdout, "wirebench rr")
    if r.get("status") != "completed":
        raise RuntimeError(f"wirebench rr status {r.get('status')}: {r.get('error')}; "
                           f"stderr: {out.stderr.strip()[-200:]}")
    s = r["runs"][0]["summary"]
    rr = s["workload"]["rr"]  # RunResult schema 3
    lat, cw = rr["latency"], rr["client_window"]
    cpu = {c["host"]: c for c in s.get("cpu") or []}
    return {
        "tps": rr["transactions_per_s"],
        "transactions": rr["transactions"],
        # every transaction of the client's life (warm-up included): the per-transaction CPU
        # figure divides the process's whole CPU time by this, as for sockperf
        "transactions_total": (rr.get("client_total") or {}).get("transactions",
                                                                 rr["transactions"]),
        "p50_us": lat["p50_ns"] / 1e3,
        "p99_us": lat["p99_ns"] / 1e3,
        "lost": cw.get("lost", 0),
        "errors": cw.get("errors", 0),
        "cc_reported": ",".join(s.get("congestion") or []),
        "wb_sd_tx_client_threads": cpu.get("client", {}).get("threads_service_demand_us_per_tx"),
        "wb_sd_tx_server_threads": cpu.get("server", {}).get("threads_service_demand_us_per_tx"),
    }


def parse_sockperf_rr(out):
    if out.returncode != 0:
        raise RuntimeError(f"sockperf rc={out.returncode}: {(out.stdout + out.stderr).strip()[-300:]}")
    text = out.stdout + "\n" + out.stderr
    r = parse_sockperf(text)
    total = re.search(r"\[Total Run\] RunTime=[\d.]+ sec;.*?ReceivedMessages=(\d+)", text)
    return {"tps": r["tps"], "transactions": r["transactions"],
            "transactions_total": int(total.group(1)) if total else r["transactions"],
            "p50_us": r["p50_us"],
            "p99_us": r["p99_us"], "lost": r["lost"], "errors": 0,
            "tps_from_avg_rtt": r["tps_from_avg_rtt"], "cc_reported": None}


def parse_netperf_rr(out):
    lines = [ln for ln in out.stdout.strip().splitlines() if ln.strip()]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"netperf rc={out.returncode}: {(out.stdout + out.stderr).strip()[-300:]}")
    tps, p50, p99, _mean, secs = (float(x) for x in lines[-1].split(",")[:5])
    return {"tps": tps, "transactions": tps * secs, "transactions_total": tps * secs,
            "p50_us": p50, "p99_us": p99, "lost": None,
            "errors": 0, "cc_reported": None}


def parse_neper_rr(out):
    """neper's client: throughput = transactions/s over its own sample window; it prints the
    mean latency, not percentiles."""
    kv = _neper_kv(out.stdout)
    if out.returncode != 0 or "throughput" not in kv:
        raise RuntimeError(f"neper tcp_rr rc={out.returncode}: "
                           f"{(out.stdout + out.stderr).strip()[-300:]}")
    tps = float(kv["throughput"])
    n = int(kv.get("num_transactions", 0)) or tps * float(kv.get("total_run_time", "nan"))
    return {"tps": tps, "transactions": n, "transactions_total": n, "p50_us": None,
            "p99_us": None, "lost": None, "errors": 0, "cc_reported": None,
            "mean_us": float(kv.get("latency_mean", "nan")) * 1e6}


RR_PARSERS = {"wb": parse_wb_rr, "sockperf": parse_sockperf_rr, "netperf": parse_netperf_rr,
              "neper": parse_neper_rr}
