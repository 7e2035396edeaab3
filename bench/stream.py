#!/usr/bin/env python3
"""Side-by-side stream benchmark: wirebench vs iperf3 (and netperf when installed).

Every path is built fresh in private network namespaces whose routes carry `congctl <cc>`, so
every tool uses the same congestion control (cubic by default) without touching the host:
  loopback      one namespace, client and server on 127.0.0.1
  veth-<mtu>    two namespaces joined by a veth pair at MTU 1500, 9000 and 65520
Runs are interleaved in ABBA order (A B, B A, A B, ...), client pinned to CPU 0 and server to CPU 1
(taskset), each run --seconds long. Reported: the median receiver throughput in Gbit/s
(10^9 bit/s of payload) of each tool, the ratio of the medians, the median of the per-round
paired ratios (robust when the host drifts between fast and slow phases), and wirebench's
service demand.

Needs root, iproute2, iperf3, and a release build (cargo build --release).
Usage: sudo python3 bench/stream.py [--runs 5] [--seconds 5] [--paths loopback,veth-1500,...]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The namespaces, `sh` and `in_ns` live in bench/common.py (shared with bench/run.py);
# re-exported here for bench/paths.py.
from common import A_ADDR, B_ADDR, ROOT, WB, in_ns, sh  # noqa: E402,F401
from common import Testbed as Path  # noqa: E402,F401


def serve_auth_args(path):
    """`serve` refuses a non-loopback bind without keys unless told: these namespaces are
    private to this run, so the test daemon runs without authentication there."""
    return [] if path.server_addr.startswith("127.") else ["--allow-unauthenticated"]


def stop_on_sigterm():
    """Turn SIGTERM into SystemExit, so that `finally` blocks stop the servers and delete the
    namespaces when the benchmark is killed."""
    import signal

    def handler(signum, frame):
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, handler)


class Server:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def run_wirebench(path, secs, extra=()):
    out = sh(*in_ns(path.client_ns, 0, WB, "stream", "-H", path.server_addr, "-t", str(secs),
                    "--json", *extra), check=False, timeout=secs + 60)
    r = json.loads(out.stdout)
    s = r["runs"][-1]["summary"]
    d = s["workload"]["stream"]["directions"][0]  # RunResult schema 3
    cpu = {c["host"]: c for c in s["cpu"]}
    return {
        "gbps": d["receiver_throughput_bps"] / 1e9,
        "cc": ",".join(s["congestion"]),
        "sd_client": cpu.get("client", {}).get("service_demand_us_per_kb"),
        "sd_server": cpu.get("server", {}).get("service_demand_us_per_kb"),
    }


def run_iperf3(path, secs, extra=()):
    out = sh(*in_ns(path.client_ns, 0, "iperf3", "-c", path.server_addr, "-t", str(secs), "-J",
                    *extra), check=False, timeout=secs + 60)
    r = json.loads(out.stdout)
    end = r["end"]
    return {"gbps": end["sum_received"]["bits_per_second"] / 1e9,
            "cc": end.get("receiver_tcp_congestion", end.get("sender_tcp_congestion", "?"))}


def run_netperf(path, secs):
    out = sh(*in_ns(path.client_ns, 0, "netperf", "-H", path.server_addr, "-l", str(secs), "-P",
                    "0", "-t", "TCP_STREAM", "--", "-o", "THROUGHPUT,THROUGHPUT_UNITS"),
             check=False, timeout=secs + 60)
    val, unit = out.stdout.strip().splitlines()[-1].split(",")
    scale = {"10^6bits/s": 1e-3, "10^9bits/s": 1.0}.get(unit.strip(), 1e-3)
    return {"gbps": float(val) * scale, "cc": "ns default"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--paths", default="loopback,veth-1500,veth-9000,veth-65520")
    args = ap.parse_args()
    stop_on_sigterm()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    if not os.path.exists(WB):
        sys.exit(f"{WB} missing: run cargo build --release")
    tools = {"wirebench": None, "iperf3": None}
    if shutil.which("netperf") and shutil.which("netserver"):
        tools["netperf"] = None
    rows = []
    for pname in args.paths.split(","):
        path = Path(pname, args.cc)
        servers = []
        try:
            servers.append(Server(in_ns(path.server_ns, 1, WB, "serve", "--bind", path.server_addr,
                                        *serve_auth_args(path))))
            servers.append(Server(in_ns(path.server_ns, 1, "iperf3", "-s")))
            if "netperf" in tools:
                servers.append(Server(in_ns(path.server_ns, 1, "netserver", "-D")))
            results = {t: [] for t in tools}
            order = list(tools)
            for i in range(args.runs):
                # ABBA: alternate the order each round so slow drifts of the host hit every
                # tool alike; a round's results form a pair for the paired ratio.
                for t in (order if i % 2 == 0 else order[::-1]):
                    fn = {"wirebench": run_wirebench, "iperf3": run_iperf3, "netperf": run_netperf}[t]
                    try:
                        results[t].append(fn(path, args.seconds))
                    except Exception as e:  # a failed run is reported, not hidden
                        print(f"{pname} {t} run {i}: failed: {e}", file=sys.stderr)
                    time.sleep(0.5)
            med = {t: statistics.median([r["gbps"] for r in rs]) if rs else float("nan")
                   for t, rs in results.items()}
            paired = {p: statistics.median([w["gbps"] / o["gbps"] for w, o in
                                            zip(results["wirebench"], results[p]) if o["gbps"]])
                      if results[p] and results["wirebench"] else float("nan")
                      for p in tools if p != "wirebench"}
            wb = results["wirebench"]
            rows.append({
                "path": pname, "median_gbps": med, "paired_ratio": paired,
                "runs": {t: [round(r["gbps"], 2) for r in rs] for t, rs in results.items()},
                "cc": {t: sorted({r["cc"] for r in rs}) for t, rs in results.items()},
                "sd_client_us_per_kb": statistics.median([r["sd_client"] for r in wb if r["sd_client"]]) if wb else None,
                "sd_server_us_per_kb": statistics.median([r["sd_server"] for r in wb if r["sd_server"]]) if wb else None,
            })
        finally:
            for s in servers:
                s.stop()
            path.close()
    peers = [t for t in tools if t != "wirebench"]
    print(f"\nTCP stream, congestion control {args.cc} in every namespace, {args.runs} interleaved "
          f"runs of {args.seconds:g} s, client CPU 0, server CPU 1; median receiver Gbit/s (10^9 bit/s)\n")
    head = "| path | wirebench | " + " | ".join(peers) + " | " + " | ".join(f"ratio of medians vs {p} | median paired ratio vs {p}" for p in peers) + " | wirebench SD client/server us/KB |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        m = r["median_gbps"]
        ratios = " | ".join((f"{m['wirebench'] / m[p]:.2f}x" if m[p] else "n/a") + f" | {r['paired_ratio'][p]:.2f}x" for p in peers)
        sd = f"{r['sd_client_us_per_kb'] or float('nan'):.3f} / {r['sd_server_us_per_kb'] or float('nan'):.3f}"
        print(f"| {r['path']} | {m['wirebench']:.1f} | " + " | ".join(f"{m[p]:.1f}" for p in peers) + f" | {ratios} | {sd} |")
    print("\nraw runs (Gbit/s) and congestion control seen:")
    for r in rows:
        print(f"  {r['path']}: {r['runs']}  cc={r['cc']}")


if __name__ == "__main__":
    main()
