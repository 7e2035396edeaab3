#!/usr/bin/env python3
"""What `--profile` costs a loopback stream: interleaved runs with and without profiling.

One private network namespace (loopback, routes carrying `congctl <cc>`, cubic by default, the
host untouched). A wirebench daemon with `--allow-profile` pinned to CPU 1 (taskset), the
client pinned to CPU 0, one TCP flow, default call size, `--seconds` per run. With `--profile`
each end samples the CPU it runs on (its affinity): both CPUs are sampled, once each, at the
frequency given (default 4000 Hz per CPU), over each end's measurement window.

Variants, one run each per round, in an order that reverses every other round (ABBA):
  off             no profiling (the reference of every ratio)
  profile         `--profile` with this build's settings
  profile-base    `--profile` with another build (`--base-bin`: client and its own daemon),
                  e.g. the build before a change to the sampler's settings
  perf-g, perf    `perf record -a -g` / `perf record -a` (no call chains) at the same
                  frequency around an unprofiled run (`--perf`): what the kernel's own
                  sampler costs, for comparison

Reported per variant: the median receiver throughput in Gbit/s (10^9 bit/s of payload,
measured by the receiving end over its window), and the median of the per-round ratios to
`off` in the same round (robust when the host drifts between fast and slow phases); the
overhead is 1 - that ratio. For profiled runs also the samples each end's profile counted
and the samples the kernel dropped (`lost_samples`), so a profile that did not sample is seen.
The CPU model (/proc/cpuinfo) and the kernel are printed.

Needs root, iproute2, a release build (and perf for --perf).
Usage: sudo python3 bench/profile_overhead.py [--runs 7] [--seconds 4] [--hz 4000]
       [--base-bin PATH] [--perf] [--json FILE]
"""

import argparse
import json
import os
import platform
import signal
import statistics
import secrets
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_model  # noqa: E402
from stream import WB, Path, Server, in_ns, sh, stop_on_sigterm  # noqa: E402

BASE_PORT = 5299  # the --base-bin daemon's port (the default daemon keeps 5201)


# A daemon that profiles for its clients needs authenticated clients (`serve --allow-profile`
# refuses to start without --auth-keys): one identity, a random key, in a file only root reads.
KEYS = tempfile.NamedTemporaryFile("w", prefix="wb-po-keys-", delete=False)
KEYS.write(f"bench {secrets.token_hex(32)}\n")
KEYS.close()
os.chmod(KEYS.name, 0o600)
AUTH = ["--auth", "bench", "--auth-key-file", KEYS.name]


def run_stream(path, binary, secs, extra, port=None):
    argv = in_ns(path.client_ns, 0, binary, "stream", "-H", path.server_addr, "-t", str(secs),
                 "--json", *(["-p", str(port)] if port else []), *AUTH, *extra)
    out = sh(*argv, check=False, timeout=secs + 60)
    r = json.loads(out.stdout)
    if r.get("status") != "completed":
        raise RuntimeError(f"status {r.get('status')}: {r.get('error')}")
    run = r["runs"][-1]
    d = run["summary"]["workload"]["stream"]["directions"][0]  # RunResult schema 3
    res = {"gbps": d["receiver_throughput_bps"] / 1e9,
           "cc": ",".join(run["summary"]["congestion"])}
    for end in ("client", "server"):
        p = run[end].get("profile")
        if isinstance(p, dict) and "samples" in p:
            res[f"{end}_samples"] = p["samples"]
            res[f"{end}_lost"] = p["lost_samples"]
            res[f"{end}_window_s"] = p["window_ns"] / 1e9
        elif p is not None:
            res[f"{end}_profile"] = p  # the typed reason there is none: shown, not hidden
    return res


def run_under_perf(path, secs, hz, callchain):
    """An unprofiled run with `perf record -a` (system-wide, all CPUs) around it."""
    with tempfile.NamedTemporaryFile(suffix=".data", delete=False) as f:
        data = f.name
    argv = ["perf", "record", "-a", "-F", str(hz), *(["-g"] if callchain else []),
            "-o", data, "--", "sleep", str(secs + 30)]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # perf opens its events and mmaps its rings before the test starts
        return run_stream(path, WB, secs, [])
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        os.unlink(data)


def summarize(results, variants):
    off = results["off"]
    rows = []
    for v in variants:
        rs = results[v]
        pairs = [r["gbps"] / o["gbps"] for r, o in zip(rs, off) if r and o and o["gbps"]]
        ok = [r for r in rs if r]
        row = {
            "variant": v,
            "median_gbps": statistics.median([r["gbps"] for r in ok]) if ok else None,
            "paired_ratio_median": statistics.median(pairs) if pairs else None,
            "overhead_pct": (1 - statistics.median(pairs)) * 100 if pairs else None,
            "gbps": [round(r["gbps"], 2) if r else None for r in rs],
            "pairs": [round(x, 3) for x in pairs],
            "cc": sorted({r["cc"] for r in ok}),
        }
        for end in ("client", "server"):
            s = [r[f"{end}_samples"] / r[f"{end}_window_s"] for r in ok if f"{end}_samples" in r]
            if s:
                row[f"{end}_samples_per_s"] = round(statistics.median(s))
                row[f"{end}_lost"] = sum(r[f"{end}_lost"] for r in ok if f"{end}_lost" in r)
            reasons = sorted({json.dumps(r[f"{end}_profile"]) for r in ok if f"{end}_profile" in r})
            if reasons:
                row[f"{end}_no_profile"] = reasons
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--hz", type=int, default=4000)
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--base-bin", help="another wirebench build to compare (profile-base)")
    ap.add_argument("--perf", action="store_true", help="also perf record -a [-g] variants")
    ap.add_argument("--json", help="write the rows and every run here")
    args = ap.parse_args()
    stop_on_sigterm()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, system-wide perf events)")
    if not os.path.exists(WB):
        sys.exit(f"{WB} missing: run cargo build --release (or set WIREBENCH_BIN)")
    prof = ["--profile-hz", str(args.hz)]
    variants = ["off", "profile"]
    if args.base_bin:
        variants.append("profile-base")
    if args.perf:
        variants += ["perf-g", "perf"]
    print(f"CPU: {cpu_model()} ({os.cpu_count()} CPUs); kernel {platform.release()}; "
          f"{args.runs} rounds of {args.seconds} s; {args.hz} Hz per CPU; cc {args.cc}",
          flush=True)
    path = Path("loopback", args.cc)
    servers = []
    results = {v: [] for v in variants}
    try:
        servers.append(Server(in_ns(path.server_ns, 1, WB, "serve", "--bind", path.server_addr,
                                    "--allow-profile", "--auth-keys", KEYS.name)))
        if args.base_bin:
            servers.append(Server(in_ns(path.server_ns, 1, args.base_bin, "serve", "--bind",
                                        path.server_addr, "-p", str(BASE_PORT),
                                        "--allow-profile", "--auth-keys", KEYS.name)))
        fns = {
            "off": lambda: run_stream(path, WB, args.seconds, []),
            "profile": lambda: run_stream(path, WB, args.seconds, prof),
            "profile-base": lambda: run_stream(path, args.base_bin, args.seconds, prof,
                                               port=BASE_PORT),
            "perf-g": lambda: run_under_perf(path, args.seconds, args.hz, True),
            "perf": lambda: run_under_perf(path, args.seconds, args.hz, False),
        }
        for i in range(args.runs):
            # ABBA: alternate the order each round so slow drifts of the host hit every
            # variant alike; a round's results form the pairs of the paired ratios.
            for v in (variants if i % 2 == 0 else variants[::-1]):
                try:
                    results[v].append(fns[v]())
                except Exception as e:  # a failed run is reported, not hidden
                    print(f"round {i} {v}: failed: {e}", file=sys.stderr)
                    results[v].append(None)
                time.sleep(0.5)
            print(f"round {i}: " + ", ".join(
                f"{v} {results[v][-1]['gbps']:.2f}" if results[v][-1] else f"{v} failed"
                for v in variants), flush=True)
    finally:
        os.unlink(KEYS.name)
        for s in servers:
            s.stop()
        path.close()
    rows = summarize(results, variants)
    print(f"\n{'variant':<14}{'median Gbit/s':>14}{'paired ratio':>14}{'overhead':>10}"
          f"{'samples/s (c, s)':>20}{'lost':>6}")
    for r in rows:
        ratio = f"{r['paired_ratio_median']:.3f}" if r["paired_ratio_median"] else "-"
        over = f"{r['overhead_pct']:.1f} %" if r["overhead_pct"] is not None and r["variant"] != "off" else "-"
        sps = (f"{r.get('client_samples_per_s', '-')}, {r.get('server_samples_per_s', '-')}"
               if "client_samples_per_s" in r or "server_samples_per_s" in r else "-")
        lost = r.get("client_lost", 0) + r.get("server_lost", 0)
        print(f"{r['variant']:<14}{r['median_gbps'] or float('nan'):>14.2f}{ratio:>14}{over:>10}"
              f"{sps:>20}{lost:>6}")
        for end in ("client", "server"):
            if f"{end}_no_profile" in r:
                print(f"  {end} had no profile: {r[end + '_no_profile']}")
    print("\nper-round Gbit/s: " + "; ".join(f"{r['variant']} {r['gbps']}" for r in rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_model(), "kernel": platform.release(), "args": vars(args),
                       "rows": rows, "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
