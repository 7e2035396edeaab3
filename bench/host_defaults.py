"""The rows a user runs first: the host as it is, a separate daemon, no pinning.

What a new user does before any tuning: start `wirebench serve` (or `iperf3 -s`) as its own
process on the host, then run the client against 127.0.0.1, forward and reverse, with the
host's default congestion control (maybe bbr) and wherever the scheduler puts the threads.
Neither the route nor the sysctls are touched; both tools meet the same host.

  wb-host / wb-host-R           wirebench stream (its default call size) into / out of a
                                separate `wirebench serve` process
  iperf3-1M-host / -R           iperf3 -l 1M (wirebench's default call size) against a
                                separate `iperf3 -s`
  iperf3-host                   iperf3 at its own default (128 KiB), informational

Each round runs every row once (order rotated, reversed every other round). Per row: the
median receiver Gbit/s (10^9 bit/s of payload, as each tool reports it) and the congestion
control each tool says it used; per wirebench row the median of the per-round paired ratios
against iperf3 -l 1M in the same direction, with their [min-max].
"""

import json
import os
import statistics
import subprocess

import common
from common import Proc, sh

WB_PORT, IPERF3_PORT = 5391, 5392
ROWS = {
    # key: (label, tool, extra args, reference key)
    "iperf3-1M-host": ("iperf3 -l 1M, forward", "iperf3", ["-l", "1M"], None),
    "iperf3-1M-host-R": ("iperf3 -l 1M, reverse", "iperf3", ["-l", "1M", "-R"], None),
    "iperf3-host": ("iperf3 default (128 KiB), forward (info)", "iperf3", [], None),
    "wb-host": ("wirebench default, forward", "wb", [], "iperf3-1M-host"),
    "wb-host-R": ("wirebench default, reverse", "wb", ["-R"], "iperf3-1M-host-R"),
}


def listening_here(port):
    out = sh("ss", "-Hnlt", f"sport = :{port}", check=False).stdout
    return bool(out.strip())


def client_cmd(key, secs):
    _, tool, extra, _ = ROWS[key]
    if tool == "wb":
        return [common.WB, "stream", "-H", "127.0.0.1", "-p", str(WB_PORT), "-t", f"{secs:g}",
                "--json", *extra]
    return ["iperf3", "-c", "127.0.0.1", "-p", str(IPERF3_PORT), "-t", f"{secs:g}", "-J", *extra]


def parse(key, out):
    text = out.stdout if hasattr(out, "stdout") else out
    r = json.loads(text)
    if ROWS[key][1] == "wb":
        if r.get("status") != "completed":
            raise RuntimeError(f"wirebench status {r.get('status')}: {r.get('error')}")
        s = r["runs"][-1]["summary"]
        dirs = s["workload"]["stream"]["directions"]
        return {"gbps": sum(d["receiver_throughput_bps"] for d in dirs) / 1e9,
                "cc": ",".join(s.get("congestion") or [])}
    if "error" in r:
        raise RuntimeError(f"iperf3: {r['error']}")
    end = r["end"]
    return {"gbps": end["sum_received"]["bits_per_second"] / 1e9,
            "cc": end.get("sender_tcp_congestion") or end.get("receiver_tcp_congestion") or "?"}


def run(rounds, secs, log):
    """Run the rows; returns the document section (rows, per-round runs, host cc)."""
    host_cc = open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()
    keys = list(ROWS)
    runs = {k: [] for k in keys}
    servers = []
    try:
        servers.append(Proc("wirebench serve (host)", [common.WB, "serve", "--bind", "127.0.0.1",
                                                        "--port", str(WB_PORT)],
                            ready=lambda: listening_here(WB_PORT)))
        servers.append(Proc("iperf3 -s (host)", ["iperf3", "-s", "-B", "127.0.0.1", "-p",
                                                  str(IPERF3_PORT)],
                            ready=lambda: listening_here(IPERF3_PORT)))
        for i in range(rounds):
            order = keys[i % len(keys):] + keys[:i % len(keys)]
            if i % 2:
                order.reverse()
            for k in order:
                try:
                    out = subprocess.run(client_cmd(k, secs), capture_output=True, text=True,
                                         timeout=secs + 60, stdin=subprocess.DEVNULL)
                    res = parse(k, out)
                except Exception as e:  # a failed run is reported, not hidden
                    res = {"gbps": None, "error": str(e)[:300]}
                res["round"] = i
                runs[k].append(res)
                log(f"[host] round {i + 1}/{rounds} {k}: "
                    + (f"{res['gbps']:.2f} Gbit/s cc {res.get('cc')}" if res["gbps"]
                       else f"failed: {res.get('error')}"))
    finally:
        for s in servers:
            s.stop()
    rows = []
    for k in keys:
        label, _, _, ref = ROWS[k]
        vals = [r["gbps"] for r in runs[k] if r.get("gbps")]
        row = {"key": k, "label": label, "runs": len(vals),
               "gbps_median": statistics.median(vals) if vals else None,
               "cc": sorted({r.get("cc") for r in runs[k] if r.get("cc")})}
        if ref:
            ratios = [a["gbps"] / b["gbps"] for a, b in zip(runs[k], runs[ref])
                      if a.get("gbps") and b.get("gbps")]
            if ratios:
                row.update(ratio_median=statistics.median(ratios), ratio_min=min(ratios),
                           ratio_max=max(ratios), ref=ref)
        rows.append(row)
    return {"host_default_cc": host_cc, "rounds": rounds, "seconds": secs, "rows": rows,
            "runs": runs}


def markdown(sec):
    """The section of the report."""
    out = ["", "## Where users start: the host as it is",
           "",
           f"Host loopback, the host's default congestion control (**{sec['host_default_cc']}**),"
           " no pinning, a separate server process per tool (`wirebench serve`, `iperf3 -s`), "
           f"{sec['rounds']} interleaved rounds of {sec['seconds']:g} s. Receiver Gbit/s "
           "(10^9 bit/s of payload); ratio: median of the per-round paired ratios against "
           "iperf3 -l 1M in the same direction [min-max].",
           "",
           "| row | runs | Gbit/s (median) | cc used | ratio to iperf3 -l 1M |",
           "|---|---:|---:|---|---|"]
    for r in sec["rows"]:
        g = f"{r['gbps_median']:.2f}" if r.get("gbps_median") else "failed"
        ratio = (f"{r['ratio_median']:.2f}x [{r['ratio_min']:.2f}-{r['ratio_max']:.2f}]"
                 if r.get("ratio_median") else "")
        out.append(f"| {r['label']} | {r['runs']} | {g} | {', '.join(r['cc'])} | {ratio} |")
    return "\n".join(out) + "\n"
