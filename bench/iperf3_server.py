#!/usr/bin/env python3
"""Stock `iperf3 -c` against `wirebench serve --iperf3` and against `iperf3 -s`: same client,
same options, same path, interleaved (the order alternates every repetition), so drift in
the machine's load hits both servers alike.

For each run: the receiver's throughput as the iperf3 client reports it (`end.sum_received`,
bit/s, 10^9 = Gbit/s; for a forward test that is the server's own count over the server's
window, for -R the client's count), for UDP also the loss the client prints (lost/total, %,
from the receiver's figures), and the server process's CPU (utime+stime of all its threads
from /proc/PID/stat, over the client's wall time, in % of one CPU). Per case and server:
medians and the spread (min-max); per case: the paired ratios wirebench/iperf3 of each
repetition (throughput and server CPU), their median and [min-max]. Client pinned to CPU 0
and servers to CPU 1 when the machine has two or more CPUs. Every TCP socket gets --cc (the
namespaces' routes carry `congctl`), read back and recorded.

    sudo bench/iperf3_server.py [--path loopback|veth-1500] [--reps 5] [--time 3]
                                [--case "-R"]... [--cc cubic] [--json FILE] [--md FILE]

Without --case: TCP forward, TCP -R, UDP -b 1G -l 1400 forward and -R.

Python 3 standard library only; the namespaces are private and removed at exit.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


DEFAULT_CASES = ["", "-R", "-u -b 1G -l 1400", "-u -b 1G -l 1400 -R"]


def run_once(tb, server, port, opts, secs, client_cpu):
    argv = common.in_ns(tb.client_ns, client_cpu, "iperf3", "-c", tb.server_addr, "-p",
                        str(port), "-t", str(secs), "-J", *opts)
    cpu0 = server.cpu_s()
    t = common.run_timed(argv, timeout=secs + 30)
    cpu1 = server.cpu_s()
    if t.returncode != 0:
        raise RuntimeError(f"iperf3 failed against {server.name}: {t.stdout[-400:]} {t.stderr}")
    j = json.loads(t.stdout)
    if "error" in j:
        raise RuntimeError(f"iperf3 against {server.name}: {j['error']}")
    got = j["end"]["sum_received"]
    return {
        "server": server.name,
        "receiver_bps": got["bits_per_second"],
        "sender_bps": j["end"]["sum_sent"]["bits_per_second"],
        "lost_pct": got.get("lost_percent"),
        "jitter_ms": got.get("jitter_ms"),
        "server_cpu_pct": (cpu1 - cpu0) / t.wall_s * 100.0,
        "wall_s": t.wall_s,
    }


def spread(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def summary(rows, name):
    mine = [r for r in rows if r["server"] == name]
    out = {}
    for key in ("receiver_bps", "server_cpu_pct", "lost_pct"):
        v = [r[key] for r in mine if r[key] is not None]
        if v:
            out[key] = spread(v)
    return out


def paired(rows, key):
    """wirebench/iperf3 of `key` per repetition: median and [min-max]."""
    by_rep = {}
    for r in rows:
        by_rep.setdefault(r["rep"], {})[r["server"]] = r[key]
    ratios = [d["wirebench"] / d["iperf3"] for d in by_rep.values()
              if d.get("iperf3") and d.get("wirebench") is not None]
    return spread(ratios) if ratios else None


def markdown(result):
    s = result
    out = [f"# `iperf3 -c` against `wirebench serve --iperf3` and `iperf3 -s`, {s['path']}",
           "",
           f"- Machine: {s['cpu_model']}, {os.cpu_count()} CPUs, kernel {s['kernel']}; "
           f"load average before {s['loadavg_before']}, after {s['loadavg_after']}",
           f"- Client and servers: {s['iperf3']} (client on CPU 0, servers on CPU 1); "
           f"wirebench {s['commit']}",
           f"- Congestion control: {s['cc']} on every route (read back: "
           f"{sorted({d['route_congctl'] for d in s['readback'].values()})})",
           f"- Method: {s['reps']} interleaved repetitions per case (the order alternates), "
           f"`-t {s['time_s']}`; medians [min-max]; ratios are wirebench/iperf3 paired within "
           "each repetition. Throughput: the client's `sum_received` (forward: the server's "
           "count over its window; -R: the client's). Server CPU: utime+stime of the server "
           "process over the client's wall time, % of one CPU. UDP loss: the client's "
           "lost/total of the receiver line.",
           f"- Command: `{s['command']}`",
           "",
           "| case | server | Gbit/s | server CPU % | UDP loss % | throughput ratio | "
           "CPU ratio |",
           "|---|---|---|---|---|---|---|"]

    def fmt(d, scale=1.0, digits=2):
        if not d:
            return "—"
        return (f"{d['median'] / scale:.{digits}f} [{d['min'] / scale:.{digits}f}–"
                f"{d['max'] / scale:.{digits}f}]")

    for case in s["cases"]:
        for name, sm in case["summary"].items():
            ratio = case["ratio_bps"] if name == "wirebench" else None
            cpu_ratio = case["ratio_cpu"] if name == "wirebench" else None
            out.append(f"| `{case['opts'] or '(TCP)'}` | {name} | "
                       f"{fmt(sm.get('receiver_bps'), 1e9)} | "
                       f"{fmt(sm.get('server_cpu_pct'), 1.0, 1)} | "
                       f"{fmt(sm.get('lost_pct'), 1.0, 3)} | "
                       f"{fmt(ratio) if ratio else '—'} | "
                       f"{fmt(cpu_ratio) if cpu_ratio else '—'} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", default="loopback")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--time", type=int, default=3)
    ap.add_argument("--case", action="append", help="iperf3 options of one case (repeatable)")
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args()
    common.install_signal_handlers()
    two = (os.cpu_count() or 1) >= 2
    ccpu, scpu = (0, 1) if two else (None, None)
    tb = common.Testbed(a.path, a.cc, prefix="wbi3")
    servers = []
    try:
        ns = tb.server_ns
        ip3 = common.Proc("iperf3", common.in_ns(ns, scpu, "iperf3", "-s", "-p", "5201"),
                          ready=lambda: common.listening(ns, 5201))
        servers.append(ip3)
        bind = tb.server_addr
        wb = common.Proc("wirebench", common.in_ns(
            ns, scpu, common.WB, "serve", "--bind", bind, "--allow-unauthenticated",
            "--port", "5301", "--iperf3", "--iperf3-port", "5202"),
            ready=lambda: common.listening(ns, 5202))
        servers.append(wb)
        ports = {"iperf3": 5201, "wirebench": 5202}
        readback = tb.readback()
        if not tb.cc_ok(readback):
            raise common.SetupError(f"congestion control not {a.cc}: {readback}")
        load_before = common.loadavg()
        cases = []
        for opts_text in a.case or DEFAULT_CASES:
            opts = opts_text.split()
            rows = []
            for rep in range(a.reps):
                order = servers if rep % 2 == 0 else list(reversed(servers))
                for s in order:
                    r = run_once(tb, s, ports[s.name], opts, a.time, ccpu)
                    r["rep"] = rep
                    rows.append(r)
                    time.sleep(0.5)
            case = {"opts": opts_text,
                    "summary": {s.name: summary(rows, s.name) for s in servers},
                    "ratio_bps": paired(rows, "receiver_bps"),
                    "ratio_cpu": paired(rows, "server_cpu_pct"), "runs": rows}
            cases.append(case)
            rb, rc = case["ratio_bps"], case["ratio_cpu"]
            print(f"{a.path} `{opts_text}`: throughput wirebench/iperf3 {rb['median']:.2f} "
                  f"[{rb['min']:.2f}-{rb['max']:.2f}], server CPU {rc['median']:.2f} "
                  f"[{rc['min']:.2f}-{rc['max']:.2f}]", flush=True)
        result = {
            "path": a.path, "cc": a.cc, "time_s": a.time, "reps": a.reps,
            "cpu_model": common.cpu_model(), "kernel": os.uname().release,
            "iperf3": common.tool_version(["iperf3", "--version"]),
            "loadavg_before": load_before, "loadavg_after": common.loadavg(),
            "commit": common.git_commit(), "readback": readback,
            "command": " ".join(sys.argv), "cases": cases,
        }
        if a.json:
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
        if a.md:
            with open(a.md, "w") as f:
                f.write(markdown(result))
    finally:
        for s in servers:
            s.stop()
        tb.close()


if __name__ == "__main__":
    main()
