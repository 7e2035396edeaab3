#!/usr/bin/env python3
"""Stock `iperf3 -c` against `wirebench serve --iperf3` and against `iperf3 -s`: same client,
same options, same path, interleaved (the order alternates every repetition), so drift in
the machine's load hits both servers alike.

For each run: the receiver's throughput as the iperf3 client reports it (`end.sum_received`,
bit/s, 10^9 = Gbit/s; for a forward test that is the server's own count over the server's
window, for -R the client's count) and the server process's CPU (utime+stime of all its
threads from /proc/PID/stat, over the client's wall time, in % of one CPU). Medians and the
spread (min-max) per server. Client pinned to CPU 0 and servers to CPU 1 when the machine
has two or more CPUs.

    sudo bench/iperf3_server.py [--path loopback|veth-1500] [--reps 5] [--time 3]
                                [--opts "-P 2"] [--cc cubic] [--json FILE]

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


def run_once(tb, server, port, opts, secs, client_cpu):
    argv = common.in_ns(tb.client_ns, client_cpu, "iperf3", "-c", tb.server_addr, "-p",
                        str(port), "-t", str(secs), "-J", *opts)
    cpu0 = server.cpu_s()
    t = common.run_timed(argv, timeout=secs + 30)
    cpu1 = server.cpu_s()
    if t.returncode != 0:
        raise RuntimeError(f"iperf3 failed against {server.name}: {t.stdout[-400:]} {t.stderr}")
    j = json.loads(t.stdout)
    return {
        "server": server.name,
        "receiver_bps": j["end"]["sum_received"]["bits_per_second"],
        "sender_bps": j["end"]["sum_sent"]["bits_per_second"],
        "server_cpu_pct": (cpu1 - cpu0) / t.wall_s * 100.0,
        "wall_s": t.wall_s,
    }


def summary(rows, name):
    mine = [r for r in rows if r["server"] == name]
    out = {}
    for key in ("receiver_bps", "server_cpu_pct"):
        v = [r[key] for r in mine]
        out[key] = {"median": statistics.median(v), "min": min(v), "max": max(v)}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", default="loopback")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--time", type=int, default=3)
    ap.add_argument("--opts", default="")
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--json")
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
        opts = a.opts.split()
        rows = []
        for rep in range(a.reps):
            order = servers if rep % 2 == 0 else list(reversed(servers))
            for s in order:
                r = run_once(tb, s, ports[s.name], opts, a.time, ccpu)
                r["rep"] = rep
                rows.append(r)
                time.sleep(0.5)
        result = {
            "path": a.path, "cc": a.cc, "opts": a.opts, "time_s": a.time, "reps": a.reps,
            "cpu_model": common.cpu_model(), "kernel": os.uname().release,
            "iperf3": common.tool_version(["iperf3", "--version"]),
            "loadavg": common.loadavg(), "commit": common.git_commit(),
            "summary": {s.name: summary(rows, s.name) for s in servers}, "runs": rows,
        }
        print(f"{a.path}, iperf3 -c -t {a.time} {a.opts} ({a.reps} interleaved pairs), "
              f"{result['cpu_model']}")
        print(f"{'server':<10} {'receiver Gbit/s median (min-max)':<36} "
              f"{'server CPU % median (min-max)'}")
        for name, s in result["summary"].items():
            bps, cpu = s["receiver_bps"], s["server_cpu_pct"]
            print(f"{name:<10} {bps['median'] / 1e9:8.2f} ({bps['min'] / 1e9:.2f}-"
                  f"{bps['max'] / 1e9:.2f}){'':<14} {cpu['median']:6.1f} "
                  f"({cpu['min']:.1f}-{cpu['max']:.1f})")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
    finally:
        for s in servers:
            s.stop()
        tb.close()


if __name__ == "__main__":
    main()
