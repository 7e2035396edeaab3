#!/usr/bin/env python3
"""Two wirebench builds, one test, interleaved: is the new build faster, slower or the same?

    python3 bench/ab.py OLD_BIN NEW_BIN [--rounds N] -- rr -t 2 -A 0,0

Each round runs the test once with each build, alternating which goes first (ABBA), with
`--json --no-save`; the figure is the client's headline rate (stream: payload bits per second
at the receivers, all directions; rr: transactions per second). Printed: each build's
figures and median, and the median of the per-round new/old ratios with their range (a drift
of the machine moves both builds of a round alike); the same for each end's CPU cost, the
data threads' own CPU time per unit of work as the result reports it (rr: µs per
transaction; stream: µs per KB), when the result has it. Needs nothing but the two binaries;
the test's own flags decide placement and congestion control.
"""
import argparse
import json
import statistics
import subprocess
import sys


def headline(r):
    """The client's headline figure of a RunResult: (value, unit)."""
    w = r["runs"][0]["summary"]["workload"]
    if "rr" in w:
        return w["rr"]["transactions_per_s"] / 1e3, "k tx/s"
    if "stream" in w:
        return sum(d["receiver_throughput_bps"] for d in w["stream"]["directions"]) / 1e9, "Gbit/s"
    raise SystemExit(f"no headline figure in {list(w)}")


def cpu_costs(r):
    """Each end's data threads' CPU per unit of work: {"client": x, "server": y} (µs per
    transaction for rr, per KB for a stream), the ends that report it."""
    key = "threads_service_demand_us_per_tx" if "rr" in r["runs"][0]["summary"]["workload"] \
        else "threads_service_demand_us_per_kb"
    return {c["host"]: c[key] for c in r["runs"][0]["summary"].get("cpu") or []
            if c.get(key) is not None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=6)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    # The test and its flags, after `--`.
    test = argv[cut + 1 :] or ["rr", "-t", "2", "-A", "0,0"]
    bins = {"old": a.old, "new": a.new}
    res = {k: [] for k in bins}
    costs = {k: [] for k in bins}
    unit = ""
    for i in range(a.rounds):
        for k in (["old", "new"] if i % 2 == 0 else ["new", "old"]):
            out = subprocess.run([bins[k], *test, "--json", "--no-save"], capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                raise SystemExit(f"{k}: exit {out.returncode}: {out.stderr.strip()[:500]}")
            r = json.loads(out.stdout)
            v, unit = headline(r)
            res[k].append(v)
            costs[k].append(cpu_costs(r))
    for k, v in res.items():
        print(f"{k}: {', '.join(f'{x:.1f}' for x in v)} {unit}; median {statistics.median(v):.1f}")
    ratios = [n / o for n, o in zip(res["new"], res["old"])]
    print(f"new/old per round: median {statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}]")
    cost_unit = "µs/tx" if unit == "k tx/s" else "µs/KB"
    for end in ("client", "server"):
        pairs = [(o[end], n[end]) for o, n in zip(costs["old"], costs["new"]) if end in o and end in n]
        if not pairs:
            continue
        olds, news = zip(*pairs)
        r = [n / o for o, n in pairs if o > 0]
        print(f"{end} CPU: old median {statistics.median(olds):.3f}, new {statistics.median(news):.3f} "
              f"{cost_unit}; new/old per round median {statistics.median(r):.3f} [{min(r):.2f}-{max(r):.2f}]")


if __name__ == "__main__":
    main()
