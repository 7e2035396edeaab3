#!/usr/bin/env python3
"""The iperf3 control exchange of wirebench's iperf3 server and client against iperf3's own,
as a logging relay between them sees it.

For each case (iperf3 client options), three pairings run through the relay of
../shared/notes/iperf3-protocol-tools (relay.py, decode.py; not part of this repository):

  reference   iperf3 -c      ->  relay  ->  iperf3 -s -1
  wb-server   iperf3 -c      ->  relay  ->  wirebench serve --iperf3
  wb-client   wirebench stream|udp --iperf3  ->  relay  ->  iperf3 -s -1

The control connection is decoded into its messages: the cookie, each state byte by name,
each JSON message by the sorted paths of its keys. Each pairing's sequence per direction is compared with
the reference's; the report lists the reference and every difference (a unified diff).
Loopback only; every process is started here and ended by its PID.

Usage: bench/iperf3_relay.py [--tools DIR] [--wirebench BIN] [--md FILE]
"""
import argparse
import difflib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (iperf3 client options, wirebench subcommand, wirebench options)
CASES = [
    ("-t 1", "stream", "-t 1"),
    ("-t 1 -R", "stream", "-t 1 -R"),
    ("-t 1 -P 2", "stream", "-t 1 -P 2"),
    ("-t 1 --bidir", "stream", "-t 1 --bidir"),
    ("-n 10M", "stream", "-n 10M"),
    ("-u -b 10M -l 1400 -t 1", "udp", "-b 10M -l 1400 -t 1"),
    ("-u -b 10M -l 1400 -t 1 -R", "udp", "-b 10M -l 1400 -t 1 -R"),
]

SERVER_PORT = 5299
RELAY_PORT = 5300
WB_CONTROL_PORT = 5298

LINE = re.compile(r"^\s*[\d.]+ ms  (client -> server|server -> client)  (.*)$")


def wait_listen(port, within=10.0):
    until = time.monotonic() + within
    while time.monotonic() < until:
        out = subprocess.run(["ss", "-Hltn", "sport", "=", f":{port}"],
                             capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.02)
    raise SystemExit(f"nothing listens on {port}")


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def key_paths(v, prefix=""):
    """Every key path of a JSON value, sorted: `streams[].bytes` for a list of objects."""
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            out.add(prefix + k)
            out |= key_paths(x, prefix + k + ".")
    elif isinstance(v, list):
        for x in v:
            out |= key_paths(x, prefix[:-1] + "[]." if prefix else "[].")
    return out


def messages(tools, log):
    """The decoded control messages: [(direction, message)], JSON reduced to its key paths."""
    out = subprocess.run([sys.executable, os.path.join(tools, "decode.py"), log, "1",
                          "1000000"], capture_output=True, text=True).stdout
    seq = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = LINE.match(line)
        if not m:
            continue
        d, msg = ("C>S" if m.group(1).startswith("client") else "S>C"), m.group(2)
        if msg.startswith("COOKIE"):
            msg = "COOKIE"
        elif msg.startswith("JSON"):
            body = lines[i + 1].strip() if i + 1 < len(lines) else ""
            try:
                msg = "JSON " + " ".join(sorted(key_paths(json.loads(body))))
            except ValueError:
                msg = "JSON (not parsed)"
        elif msg.startswith("STATE"):
            msg = msg.split()[-1]
        seq.append(f"{d} {msg}")
    return seq


def without_3_14(msg):
    """`msg` without the results keys iperf3 added in 3.14."""
    drop = {"streams[].omitted_errors", "streams[].omitted_packets"}
    if " JSON " not in msg:
        return msg
    head, keys = msg.split(" JSON ", 1)
    return head + " JSON " + " ".join(k for k in keys.split() if k not in drop)


def run_pair(tools, server_cmd, client_cmd, logdir, name, daemon=False):
    log = os.path.join(logdir, name + ".log")
    server = None
    if not daemon:
        server = subprocess.Popen(server_cmd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        wait_listen(SERVER_PORT)
    relay = subprocess.Popen([sys.executable, os.path.join(tools, "relay.py"),
                              str(RELAY_PORT), str(SERVER_PORT), log, "20"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listen(RELAY_PORT)
    c = subprocess.run(client_cmd, capture_output=True, text=True, timeout=60)
    time.sleep(0.5)
    stop(relay)
    if server is not None:
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            stop(server)
    return c.returncode, messages(tools, log)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", default=os.path.join(ROOT, "..", "shared", "notes",
                                                   "iperf3-protocol-tools"))
    ap.add_argument("--wirebench", default=os.path.join(ROOT, "target", "release", "wirebench"))
    ap.add_argument("--md", default=None)
    a = ap.parse_args()
    for f in ("relay.py", "decode.py"):
        if not os.path.exists(os.path.join(a.tools, f)):
            raise SystemExit(f"{f} not found in {a.tools} (--tools)")
    version = subprocess.run(["iperf3", "--version"], capture_output=True,
                             text=True).stdout.splitlines()[0]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    logdir = tempfile.mkdtemp(prefix="wb-relay-")
    iperf3_server = ["iperf3", "-s", "-p", str(SERVER_PORT), "-1", "-B", "127.0.0.1"]
    lines = [f"# The iperf3 control exchange through a logging relay, {time.strftime('%Y-%m-%d')}",
             "",
             f"iperf3: {version}; wirebench {commit}. Loopback; `bench/iperf3_relay.py`. "
             "Each sequence is the control connection's messages in order (C>S: client to "
             "server), JSON messages by the sorted paths of their keys. `same` means the pairing's "
             "sequence equals the reference's (iperf3 at both ends).", ""]
    differences = 0
    for i3_args, sub, wb_args in CASES:
        i3_client = ["iperf3", "-c", "127.0.0.1", "-p", str(RELAY_PORT)] + shlex.split(i3_args)
        rc_ref, ref = run_pair(a.tools, iperf3_server, i3_client, logdir, "ref")
        daemon = subprocess.Popen([a.wirebench, "serve", "--port", str(WB_CONTROL_PORT),
                                   "--iperf3", "--iperf3-port", str(SERVER_PORT)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listen(SERVER_PORT)
            rc_srv, srv = run_pair(a.tools, None, i3_client, logdir, "wbs", daemon=True)
        finally:
            stop(daemon)
        wb_client = [a.wirebench, sub, "--iperf3", "-H", "127.0.0.1", "-p",
                     str(RELAY_PORT), "-q"] + shlex.split(wb_args)
        rc_cli, cli = run_pair(a.tools, iperf3_server, wb_client, logdir, "wbc")
        lines += [f"## `iperf3 -c {i3_args}`", "",
                  f"reference (exit {rc_ref}):", "", "```"] + ref + ["```", ""]
        for name, rc, seq in (("wirebench serve --iperf3", rc_srv, srv),
                              (f"wirebench {sub} --iperf3 {wb_args}", rc_cli, cli)):
            diff = list(difflib.unified_diff(ref, seq, "reference", name, lineterm="", n=1))
            if diff and [without_3_14(x) for x in seq] == ref:
                lines += [f"{name} (exit {rc}): same but for `streams[].omitted_errors` and "
                          "`streams[].omitted_packets` in its results, which iperf3 sends "
                          "from 3.14 (a 3.14+ client in reverse UDP misreads results "
                          "without them) and 3.12 ignores", ""]
            elif diff:
                differences += 1
                lines += [f"{name} (exit {rc}): differs", "", "```diff"] + diff + ["```", ""]
            else:
                lines += [f"{name} (exit {rc}): same", ""]
    lines += [f"{differences} of {2 * len(CASES)} pairings differ from the reference."]
    text = "\n".join(lines) + "\n"
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
