"""Summaries, target verdicts and the Markdown/JSON outputs of bench/run.py."""

import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
import host_defaults  # noqa: E402
import run_tools as T  # noqa: E402

# (what, variant, reference, figure, comparison, need)
STREAM_TARGETS = [
    ("default stream >= 1.10x iperf3", "wb", "iperf3", "gbps", ">=", 1.10),
    ("-l 128K >= 1.0x iperf3", "wb-128k", "iperf3", "gbps", ">=", 1.0),
    ("-Z >= 1.0x iperf3 -Z", "wb-Z", "iperf3-Z", "gbps", ">=", 1.0),
    ("zero-copy pair >= 1.7x iperf3", "wb-zc", "iperf3", "gbps", ">=", 1.7),
    ("default stream service demand, sender <= iperf3's", "wb", "iperf3", "sd_snd", "<=", 1.0),
    ("default stream service demand, receiver <= iperf3's", "wb", "iperf3", "sd_rcv", "<=", 1.0),
    ("10,000 flows >= 1.2x neper's 10,000 flows", "wb-P10000", "neper-F10000", "gbps", ">=",
     1.2),
]
# The last field, where present: the rr placement the target is for.
RR_TARGETS = [
    ("rr TCP >= 1.02x sockperf TCP, same CPU", "wb-rr-tcp", "sockperf-tcp", "tps", ">=", 1.02,
     "same"),
    ("rr TCP >= 1.05x sockperf TCP, split CPUs", "wb-rr-tcp", "sockperf-tcp", "tps", ">=", 1.05,
     "split"),
    ("rr UDP >= 1.02x sockperf UDP, same CPU", "wb-rr-udp", "sockperf-udp", "tps", ">=", 1.02,
     "same"),
    ("rr UDP >= 1.05x sockperf UDP, split CPUs", "wb-rr-udp", "sockperf-udp", "tps", ">=", 1.05,
     "split"),
]


def _ok(x):
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def med(xs):
    xs = [x for x in xs if _ok(x)]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".2f", none="n/a"):
    return none if not _ok(x) else format(x, spec)


def group(runs, kind):
    """{(path, placement, variant): {round: run}}, successful runs only."""
    g = {}
    for r in runs:
        if r["kind"] != kind:
            continue
        key = (r["path"], r.get("placement"), r["variant"])
        g.setdefault(key, {})
        if r.get("ok"):
            g[key][r["round"]] = r
    return g


def paired(g, path, place, var, ref, fig):
    a, b = g.get((path, place, var), {}), g.get((path, place, ref), {})
    out = []
    for i in sorted(set(a) & set(b)):
        x, y = a[i].get(fig), b[i].get(fig)
        if _ok(x) and _ok(y) and y:
            out.append(x / y)
    return out


def targets(runs, args):
    checks = []
    for kind, table in (("stream", STREAM_TARGETS), ("rr", RR_TARGETS)):
        g = group(runs, kind)
        attempted = {(r["path"], r.get("placement"), r["variant"]) for r in runs
                     if r["kind"] == kind}
        pos = {p: i for i, p in enumerate(dict.fromkeys(r["path"] for r in runs))}
        for (path, place, var) in sorted(attempted, key=lambda k: (pos[k[0]], str(k[1]), k[2])):
            for what, v, ref, fig, op, need, *only in table:
                if v != var or (only and only[0] != place):
                    continue
                rs = paired(g, path, place, var, ref, fig)
                got = med(rs)
                if got is None:
                    verdict = "MISS"
                    why = "no paired data (failed runs)"
                else:
                    verdict = "PASS" if (got >= need if op == ">=" else got <= need) else "MISS"
                    why = ""
                    if verdict == "MISS" and min(rs) <= need <= max(rs):
                        why = "rounds straddle the target"
                checks.append({
                    "target": what, "path": path, "placement": place, "variant": var,
                    "reference": ref, "figure": fig, "need": f"{op} {need:.2f}x",
                    "median_paired_ratio": got, "min": min(rs) if rs else None,
                    "max": max(rs) if rs else None, "rounds_paired": len(rs),
                    "verdict": verdict, "note": why})
    return checks


def stream_rows(runs):
    g = group(runs, "stream")
    rows = []
    seen = []
    for r in runs:
        k = (r["path"], None, r["variant"])
        if r["kind"] == "stream" and k not in seen:
            seen.append(k)
    order = list(T.STREAM_VARIANTS)
    pos = {p: i for i, p in enumerate(dict.fromkeys(k[0] for k in seen))}  # run order
    seen.sort(key=lambda k: (pos[k[0]], order.index(k[2])))
    allruns = [r for r in runs if r["kind"] == "stream"]
    for path, _, var in seen:
        ok = list(g.get((path, None, var), {}).values())
        n_all = sum(1 for r in allruns if r["path"] == path and r["variant"] == var)
        ref = T.STREAM_VARIANTS[var][3]
        pr = paired(g, path, None, var, ref, "gbps") if ref else []
        pi = paired(g, path, None, var, "iperf3", "gbps") if var != "iperf3" else []
        notes = []
        fb = sum(r.get("fallback_flows", 0) for r in ok)
        if fb:
            notes.append(f"PATH FELL BACK to copy on {fb} flows: "
                         + "; ".join(sorted({f for r in ok for f in r.get("fallbacks", [])}))[:200])
        fe = sum(r.get("flow_errors", 0) for r in ok)
        if fe:
            notes.append(f"{fe} flow errors")
        ccs = sorted({c for r in ok for c in (r.get("cc_sockets") or [])})
        if ccs:
            notes.append("sockets: " + ",".join(ccs))
        rep = sorted({r["cc_reported"] for r in ok if r.get("cc_reported")})
        if rep and T.STREAM_VARIANTS[var][1] == "wb":
            notes.append("wb reports cc " + ",".join(rep))
        paths_used = sorted({f"{a}/{b}" for r in ok for a in r.get("send_paths", [])
                             for b in r.get("recv_paths", [])})
        if paths_used and var not in ("wb", "wb-128k"):
            notes.append("paths " + ",".join(paths_used))
        if var.startswith("wb-P10000"):
            flows = sorted({r.get("flows") for r in ok})
            eng = set()
            for r in ok:
                for e in r.get("engines", []):
                    try:
                        e = json.loads(e)
                        eng.add(f"{e.get('engine')} x{e.get('workers')}")
                    except (ValueError, AttributeError):
                        eng.add(str(e)[:40])
            notes.append(f"flows {flows}; engine per end: {', '.join(sorted(eng))}")
            pn = paired(g, path, None, var, "neper-F10000", "gbps")
            if pn:
                notes.append(f"vs neper -F 10000: {med(pn):.2f}x [{min(pn):.2f}–{max(pn):.2f}]")
        if n_all > len(ok):
            notes.append(f"{n_all - len(ok)} of {n_all} runs FAILED")
        rows.append({
            "path": path, "variant": var, "label": T.STREAM_VARIANTS[var][0], "ref": ref,
            "runs_ok": len(ok), "runs": n_all,
            "gbps": med([r["gbps"] for r in ok]),
            "per_round_gbps": [round(g[(path, None, var)][i]["gbps"], 2)
                               for i in sorted(g.get((path, None, var), {}))],
            "per_round_rate_varied": [bool(g[(path, None, var)][i].get("rate_varied"))
                                      for i in sorted(g.get((path, None, var), {}))],
            "ratio": med(pr), "ratio_min": min(pr) if pr else None,
            "ratio_max": max(pr) if pr else None,
            "ratio_iperf3": med(pi),
            "busy_cores": med([r.get("busy_cores") for r in ok]),
            "machine_busy": med([r.get("machine_busy_cores") for r in ok]),
            "sd_snd": med([r.get("sd_snd") for r in ok]),
            "sd_rcv": med([r.get("sd_rcv") for r in ok]),
            "wb_sd_snd": med([r.get("wb_sd_snd_threads") for r in ok]),
            "wb_sd_rcv": med([r.get("wb_sd_rcv_threads") for r in ok]),
            "retransmits": med([r.get("retransmits") for r in ok]),
            "notes": notes,
        })
    return rows


def rr_rows(runs):
    g = group(runs, "rr")
    seen = []
    for r in runs:
        k = (r["path"], r.get("placement"), r["variant"])
        if r["kind"] == "rr" and k not in seen:
            seen.append(k)
    order = list(T.RR_VARIANTS)
    pos = {p: i for i, p in enumerate(dict.fromkeys(k[0] for k in seen))}  # run order
    seen.sort(key=lambda k: (pos[k[0]], k[1], order.index(k[2])))
    rows = []
    allruns = [r for r in runs if r["kind"] == "rr"]
    for path, place, var in seen:
        ok = list(g.get((path, place, var), {}).values())
        n_all = sum(1 for r in allruns if (r["path"], r["placement"], r["variant"])
                    == (path, place, var))
        ref = T.RR_VARIANTS[var][3]
        pr = paired(g, path, place, var, ref, "tps") if ref else []
        notes = []
        lost = sum(r.get("lost") or 0 for r in ok)
        if lost:
            notes.append(f"{lost} UDP transactions lost")
        errs = sum(r.get("errors") or 0 for r in ok)
        if errs:
            notes.append(f"{errs} errors")
        if n_all > len(ok):
            notes.append(f"{n_all - len(ok)} of {n_all} runs FAILED")
        rows.append({
            "path": path, "placement": place, "variant": var, "label": T.RR_VARIANTS[var][0],
            "ref": ref, "runs_ok": len(ok), "runs": n_all,
            "tps": med([r["tps"] for r in ok]),
            "per_round_ktps": [round(g[(path, place, var)][i]["tps"] / 1e3, 1)
                               for i in sorted(g.get((path, place, var), {}))],
            "p50_us": med([r.get("p50_us") for r in ok]),
            "p99_us": med([r.get("p99_us") for r in ok]),
            "ratio": med(pr), "ratio_min": min(pr) if pr else None,
            "ratio_max": max(pr) if pr else None,
            "busy_cores": med([r.get("busy_cores") for r in ok]),
            "machine_busy": med([r.get("machine_busy_cores") for r in ok]),
            "sd_tx_client": med([r.get("sd_tx_client") for r in ok]),
            "sd_tx_server": med([r.get("sd_tx_server") for r in ok]),
            "notes": notes,
        })
    return rows


def load_outside(runs):
    xs = [r["machine_busy_cores"] - r["busy_cores"] for r in runs
          if r.get("ok") and _ok(r.get("machine_busy_cores")) and _ok(r.get("busy_cores"))]
    return statistics.median(xs) if xs else None


def ratio_cell(r):
    if not _ok(r["ratio"]):
        return "—" if not r["ref"] else "n/a"
    return f"{r['ratio']:.2f}x [{r['ratio_min']:.2f}–{r['ratio_max']:.2f}]"


def markdown(doc, srows, rrows):
    h, cfg = doc["host"], doc["config"]
    v = h["versions"]
    L = []
    title = "quick" if doc["mode"] == "quick" else "full"
    L.append(f"# wirebench vs peers ({title} run), {h['date'][:10]}")
    L.append("")
    L.append(f"Written by `bench/run.py` (issue 14). Status: **{doc['status']}**; took "
             f"{doc['elapsed_s'] / 60:.1f} min (estimated {doc['estimated_s'] / 60:.1f}).")
    L.append("")
    L.append("| fact | value |")
    L.append("|---|---|")
    facts = [
        ("date", h["date"]), ("CPU", f"{h['cpu_model']}, {h['cpus_online']} online, usable "
                                     f"{h['cpus_usable']}"),
        ("kernel", h["kernel"]),
        ("wirebench", f"{v['wirebench']}, commit {h['wirebench_commit']}; binary "
                      f"{h['wirebench_binary']} built {h['wirebench_binary_mtime']}, sha256 "
                      f"{h.get('wirebench_sha256', '?')}… (a copy of it was measured)"),
        ("peers", f"iperf3: {v['iperf3']}; sockperf: {v['sockperf']}; nuttcp: {v['nuttcp']}; "
                  f"netperf: {v['netperf']}; neper: {v.get('neper', 'not recorded')}"),
        ("congestion control", f"host default {h['host_default_cc']} (untouched); every "
                               f"namespace route carries congctl {cfg['cc']}, read back below"),
        ("load average (1/5/15 min)", f"before {h['loadavg_before']}, after {h['loadavg_after']}"),
        ("machine busy over the whole run", f"{fmt(h.get('machine_busy_cores_whole_run'))} "
                                            "cores (/proc/stat)"),
        ("rounds / run length", f"{cfg['rounds']} rounds; streams {cfg['seconds']:g} s, rr "
                                f"{cfg['rr_seconds']} s per run"),
        ("placement", f"streams: client CPU {doc['stream_cpus'][0]}, server CPU "
                      f"{doc['stream_cpus'][1]} (taskset, wirebench also -A); rr: "
                      + ", ".join(f"{k} = client {a} / server {b}"
                                  for k, (a, b) in doc["placements"].items())),
        ("zero-copy pair", "wirebench " + " ".join(cfg["zc_pair"])),
        ("command line", f"`{doc['command_line']}`"),
    ]
    for k, val in facts:
        L.append(f"| {k} | {val} |")
    L.append("")
    for n in doc["notes"]:
        L.append(f"- {n}")
    other = load_outside(doc["runs"])
    if other is not None:
        warn = other >= 0.3 or float(h["loadavg_before"].split()[0]) >= 1.0
        L.append(f"- {'**Noise warning**: ' if warn else ''}median CPU busy outside the "
                 f"measured tools' processes during the runs: {other:.2f} cores (machine busy "
                 f"minus the tools' busy cores; includes softirq work not charged to a "
                 f"process)" + ("; other load competed with the tools, so absolute figures "
                                "are depressed and noisy — the paired ratios are the figures "
                                "to read" if warn else ""))
    L.append("")
    L.append("Congestion control and TIME-WAIT reuse read back (`ip route get <peer>` and "
             "net.ipv4.tcp_tw_reuse in each namespace; the "
             "sockets' own algorithm from `ss -ti` mid-run in round 1 is in the notes column):")
    L.append("")
    for p, info in doc["cc_readback"].items():
        parts = [f"{ns.split('-')[-1]}: route congctl **{d['route_congctl']}**, namespace "
                 f"default {d['ns_default_cc']}" + (f", MTU {d['mtu']}" if d.get("mtu") else "")
                 + (f", tcp_tw_reuse {d['tcp_tw_reuse']}" if d.get("tcp_tw_reuse") else "")
                 for ns, d in info.items()]
        L.append(f"- {p}: " + "; ".join(parts))
    L.append("")
    L.append("Method: each round runs every variant once, in an order that rotates each round "
             "and reverses every other round. Gbit/s = median receiver payload rate (10^9 bit/s). "
             "Ratio = median over rounds of variant/reference in the same round, [min–max] of "
             "those rounds. Busy cores = (client + server process CPU-s) / client wall-s; "
             "process CPU = user+system of all threads: client from wait4() rusage, server from "
             "/proc/PID/stat deltas. Machine busy = all CPUs' time less the idle /proc/stat timed, "
             "over the run. SD = service demand, CPU µs per KiB of payload delivered, sender (client "
             "process) / receiver (server process), whole process lifetime over all bytes "
             "delivered — the same method for every tool; \"wb own SD\" is wirebench's JSON "
             "figure for its data threads in the measured window (threads_service_demand_us_per_kb). "
             "rr: CPU µs per transaction = process CPU over every transaction the client completed "
             "(warm-up included; sockperf's [Total Run], wirebench's client_total). rr busy "
             "cores include sockperf's ~2 s of idle start/stop per run, so compare CPU µs/tx.")
    L.append("")
    if srows:
        L.append("## TCP stream")
        L.append("")
        L.append("| path | variant | Gbit/s | vs reference: median [min–max] | reference | "
                 "vs iperf3 | busy cores | SD send / recv µs/KiB | wb own SD send / recv | "
                 "machine busy | runs | notes |")
        L.append("|---|---|---:|---|---|---:|---:|---|---|---:|---:|---|")
        for r in srows:
            L.append(f"| {r['path']} | {r['label']} | {fmt(r['gbps'], '.1f')} | {ratio_cell(r)} | "
                     f"{r['ref'] or '—'} | {fmt(r['ratio_iperf3'], '.2f') + 'x' if _ok(r['ratio_iperf3']) else '—'} | "
                     f"{fmt(r['busy_cores'])} | {fmt(r['sd_snd'], '.3f')} / {fmt(r['sd_rcv'], '.3f')} | "
                     f"{fmt(r['wb_sd_snd'], '.3f', '—')} / {fmt(r['wb_sd_rcv'], '.3f', '—')} | "
                     f"{fmt(r['machine_busy'])} | {r['runs_ok']}/{r['runs']} | {'; '.join(r['notes'])} |")
        L.append("")
    if rrows:
        L.append("## Request/response (14 bytes each way)")
        L.append("")
        L.append("| path | placement | variant | k tx/s | p50 µs | p99 µs | vs sockperf: median "
                 "[min–max] | busy cores | CPU µs/tx client / server | machine busy | runs | notes |")
        L.append("|---|---|---|---:|---:|---:|---|---:|---|---:|---:|---|")
        for r in rrows:
            L.append(f"| {r['path']} | {r['placement']} | {r['label']} | "
                     f"{fmt(r['tps'] / 1e3 if _ok(r['tps']) else None, '.1f')} | "
                     f"{fmt(r['p50_us'], '.1f')} | {fmt(r['p99_us'], '.1f')} | {ratio_cell(r)} | "
                     f"{fmt(r['busy_cores'])} | {fmt(r['sd_tx_client'], '.1f')} / "
                     f"{fmt(r['sd_tx_server'], '.1f')} | {fmt(r['machine_busy'])} | "
                     f"{r['runs_ok']}/{r['runs']} | {'; '.join(r['notes'])} |")
        L.append("")
    checks = doc["targets"]
    if checks:
        n_miss = sum(1 for c in checks if c["verdict"] != "PASS")
        L.append(f"## Targets (issue 14): {len(checks) - n_miss} PASS, {n_miss} MISS")
        L.append("")
        L.append("| target | path | placement | median paired ratio [min–max] | need | verdict | note |")
        L.append("|---|---|---|---|---|---|---|")
        for c in checks:
            rng = (f" [{c['min']:.2f}–{c['max']:.2f}]" if _ok(c["min"]) else "")
            L.append(f"| {c['target']} | {c['path']} | {c['placement'] or '—'} | "
                     f"{fmt(c['median_paired_ratio'])}x{rng} | {c['need']} | **{c['verdict']}** | "
                     f"{c['note']} |")
        L.append("")
    L.append("## Per-round figures")
    L.append("")
    varied = 0
    for r in srows:
        marks = r.get("per_round_rate_varied") or []
        figs = ", ".join(f"{x}{'†' if i < len(marks) and marks[i] else ''}"
                         for i, x in enumerate(r["per_round_gbps"]))
        varied += sum(marks)
        L.append(f"- {r['path']} {r['label']}: [{figs}] Gbit/s")
    for r in rrows:
        L.append(f"- {r['path']} {r['placement']} {r['label']}: {r['per_round_ktps']} k tx/s")
    if varied:
        L.append("")
        L.append(f"† {varied} wirebench run{'s' if varied != 1 else ''} warned `rate_varied`: "
                 "its slowest interval moved at most half of its fastest (a state of the path "
                 "or of the machine changed during the run; see "
                 "docs/bench/2026-11-28-amd-epyc-cross-cpu-placement.md).")
    fails = [x for x in doc["runs"] if not x.get("ok")]
    if fails:
        L.append("")
        L.append("## Failed runs")
        L.append("")
        for x in fails:
            L.append(f"- {x['path']} {x.get('placement') or ''} {x['variant']} round "
                     f"{x['round'] + 1}: {x.get('error', '?')[:300]}")
    warns = sorted({x["stderr"] for x in doc["runs"] if x.get("stderr")})
    if warns:
        L.append("")
        L.append("## wirebench stderr (distinct)")
        L.append("")
        for w in warns[:10]:
            L.append("```\n" + w + "\n```")
    L.append("")
    L.append("Commands: see `runs[].command` in the JSON file beside this report.")
    if doc.get("host_defaults"):
        L.append(host_defaults.markdown(doc["host_defaults"]))
    return "\n".join(L) + "\n"


def write_outputs(doc, args):
    out_dir = args.out_dir or os.path.join(common.ROOT, "docs", "bench")
    os.makedirs(out_dir, exist_ok=True)
    day = doc["host"]["date"][:10]  # the run's start date
    # Named by date, machine and content: 2026-11-28-intel-xeon-quick-rr.md (the variants
    # of --only, when given); rename it to say what the run measured before committing it.
    only = "".join(c if c.isalnum() else "-" for c in (getattr(args, "only", "") or ""))
    base = f"{day}-{common.cpu_slug(doc['host']['cpu_model'])}" + (
        "-quick" if doc["mode"] == "quick" else "") + (f"-{only.strip('-')}" if only else "")
    md_path, json_path = os.path.join(out_dir, base + ".md"), os.path.join(out_dir, base + ".json")

    def put(path, data):
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(data)
        os.replace(tmp, path)

    try:
        srows, rrows = stream_rows(doc["runs"]), rr_rows(doc["runs"])
        doc["summary"] = {"stream": srows, "rr": rrows}
        text = markdown(doc, srows, rrows)
    finally:  # the raw runs are kept even if a summary breaks
        put(json_path, json.dumps(doc, indent=1, default=str))
    put(md_path, text)
    return md_path, json_path, text
