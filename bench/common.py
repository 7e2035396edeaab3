"""Shared pieces of the side-by-side benchmarks (bench/run.py, bench/stream.py, bench/paths.py).

  Testbed     a path built fresh in private network namespaces whose routes carry
              `congctl <cc>`: "loopback" (one namespace, 127.0.0.1) or "veth-<MTU>" (two
              namespaces joined by a veth pair, 10.203.9.1 -> 10.203.9.2). The host's sysctls
              are never touched; what the namespaces ended up with is read back. A veth
              client namespace gets net.ipv4.tcp_tw_reuse=1 (loopback's default 2 already
              reuses TIME-WAIT ports there), so that back-to-back 10,000-flow runs find ports.
  Proc        a long-lived process we started (a server); stopped by its own PID only; its CPU
              time (all threads, plus reaped children) read from /proc/PID/stat.
  run_timed   runs a client to completion with a time limit and returns its exact CPU time
              from wait4()'s rusage (all threads and waited-for children of that one PID).
  host facts  CPU model, kernel, CPUs, load average, /proc/stat busy time, tool versions.

Python 3 standard library only.
"""

import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WB = os.environ.get("WIREBENCH_BIN", os.path.join(ROOT, "target", "release", "wirebench"))
A_ADDR, B_ADDR = "10.203.9.1", "10.203.9.2"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class SetupError(RuntimeError):
    """The testbed or a server could not be built: not a measurement result."""


def sh(*args, check=True, timeout=60, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def in_ns(ns, cpu, *cmd):
    """`ip netns exec` and `taskset` both exec, so a Popen's PID is the tool's own."""
    pre = ["ip", "netns", "exec", ns]
    return pre + (["taskset", "-c", str(cpu)] if cpu is not None else []) + list(cmd)


def loopback_congctl(ns, cc):
    """Route namespace `ns`'s loopback traffic with congestion control `cc` (the host's
    default, maybe bbr, stays untouched): every TCP socket on 127.0.0.0/8 there gets it."""
    for dst in ("127.0.0.0/8", "127.0.0.1"):
        sh("ip", "-n", ns, "route", "replace", "local", dst, "dev", "lo", "table", "local",
           "proto", "kernel", "scope", "host", "src", "127.0.0.1", "congctl", cc)


def stop_process(p):
    """Stop a process we started (a Popen), by its own PID: SIGTERM, then SIGKILL after 5 s."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def install_signal_handlers():
    """SIGINT, SIGTERM and SIGHUP unwind like Ctrl-C, so every `finally` stops our servers and
    deletes our namespaces; further signals during that clean-up are ignored (a second
    Ctrl-C must not leave a namespace or a server behind)."""
    state = {"fired": False}

    def handler(signum, frame):
        if state["fired"]:
            print(f"signal {signum} ignored: cleaning up", file=sys.stderr, flush=True)
            return
        state["fired"] = True
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def stale_namespaces(prefix):
    """Namespaces named <prefix><pid>-... whose creating process is gone (a run that was
    killed with SIGKILL): safe to delete, they were ours."""
    out = sh("ip", "netns", "list", check=False).stdout
    stale = []
    for line in out.splitlines():
        name = line.split()[0] if line.strip() else ""
        m = re.match(re.escape(prefix) + r"(\d+)-", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            stale.append(name)
    return stale


class Testbed:
    """loopback or veth-<mtu>; `client_ns` and `server_ns` may be the same namespace."""

    def __init__(self, name, cc, prefix="wbb"):
        self.name, self.cc = name, cc
        tag = f"{prefix}{os.getpid()}"
        self.nss = []
        try:
            if name == "loopback":
                self.nss = [f"{tag}-lo"]
                self.client_ns = self.server_ns = self.nss[0]
                self.server_addr = self.client_addr = "127.0.0.1"
                self.mtu = None
                sh("ip", "netns", "add", self.nss[0])
                sh("ip", "-n", self.nss[0], "link", "set", "lo", "up")
            elif re.fullmatch(r"veth-\d+", name):
                self.mtu = int(name.split("-")[1])
                self.client_ns, self.server_ns = f"{tag}-a", f"{tag}-b"
                self.server_addr, self.client_addr = B_ADDR, A_ADDR
                for ns in (self.client_ns, self.server_ns):
                    sh("ip", "netns", "add", ns)
                    self.nss.append(ns)
                    sh("ip", "-n", ns, "link", "set", "lo", "up")
                sh("ip", "link", "add", "wba", "netns", self.client_ns, "type", "veth",
                   "peer", "name", "wbb", "netns", self.server_ns)
                for ns, ifn, addr in ((self.client_ns, "wba", A_ADDR),
                                      (self.server_ns, "wbb", B_ADDR)):
                    sh("ip", "-n", ns, "link", "set", ifn, "mtu", str(self.mtu))
                    sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", ifn)
                    sh("ip", "-n", ns, "link", "set", ifn, "up")
            else:
                raise SetupError(f"unknown path {name!r} (loopback or veth-<MTU>)")
            # Same congestion control for every tool, host untouched: the routes carry congctl.
            for ns in self.nss:
                loopback_congctl(ns, cc)
            # A 10,000-flow run leaves 10,000 client ports in TIME-WAIT for 60 s; loopback may
            # reuse them (tcp_tw_reuse=2, the default), a veth path may not, and two such runs
            # in a row exhaust the ephemeral range (EADDRNOTAVAIL) or slow every connect. The
            # client namespace is ours: let it reuse them, for every tool alike.
            if self.mtu:
                sh("ip", "netns", "exec", self.client_ns, "sysctl", "-qw",
                   "net.ipv4.tcp_tw_reuse=1")
            if self.mtu:
                for ns, ifn, addr in ((self.client_ns, "wba", A_ADDR),
                                      (self.server_ns, "wbb", B_ADDR)):
                    sh("ip", "-n", ns, "route", "replace", "10.203.9.0/24", "dev", ifn, "proto",
                       "kernel", "scope", "link", "src", addr, "congctl", cc)
        except subprocess.CalledProcessError as e:
            self.close()
            raise SetupError(f"building {name}: {' '.join(e.cmd)}: {e.stderr.strip()}") from e
        except BaseException:
            self.close()
            raise

    def readback(self):
        """What each namespace has: the route used to reach the peer and its congctl, the
        namespace's default tcp_congestion_control (used by routes without congctl), and the
        veth MTU."""
        info = {}
        for ns in self.nss:
            # The route a connection's congestion control comes from: towards the peer (the
            # server's own address is a local route on the server side; its accepted
            # connections take the route back to the client).
            peer = self.server_addr if ns == self.client_ns else self.client_addr
            route = sh("ip", "-n", ns, "route", "get", peer, check=False).stdout.strip()
            m = re.search(r"congctl (?:lock )?(\S+)", route)
            d = {"route_get": " ".join(route.split()),
                 "route_congctl": m.group(1) if m else None,
                 "ns_default_cc": sh("ip", "netns", "exec", ns, "cat",
                                     "/proc/sys/net/ipv4/tcp_congestion_control",
                                     check=False).stdout.strip(),
                 "tcp_tw_reuse": sh("ip", "netns", "exec", ns, "cat",
                                    "/proc/sys/net/ipv4/tcp_tw_reuse",
                                    check=False).stdout.strip()}
            if self.mtu:
                ifn = "wba" if ns == self.client_ns else "wbb"
                link = sh("ip", "-n", ns, "link", "show", ifn, check=False).stdout
                mm = re.search(r"mtu (\d+)", link)
                d["mtu"] = int(mm.group(1)) if mm else None
            info[ns] = d
        return info

    def cc_ok(self, info):
        return all(d["route_congctl"] == self.cc for d in info.values())

    def close(self):
        for ns in self.nss:
            sh("ip", "netns", "del", ns, check=False)
        self.nss = []


# ───────────── processes and their CPU time ─────────────

def _raise_nofile():
    """In the child only: as many descriptors as allowed (10,000 flows need >10,000)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for want in (1 << 20, 65536, hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
            return
        except (ValueError, OSError):
            continue


def proc_cpu_s(pid):
    """utime+stime (+cutime+cstime, children already reaped) of a process, all its threads,
    in seconds; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # fields[0] is field 3 (state); utime is field 14 -> index 11.
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


def children_of(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            kids.append(int(d))
    return kids


def tree_cpu_s(pid):
    """CPU seconds of a process and its live descendants (a forking server's children)."""
    total, todo, seen = 0.0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        c = proc_cpu_s(p)
        if c is not None:
            total += c
            todo.extend(children_of(p))
    return total


class Proc:
    """A server process we started; stopped by its own PID only."""

    def __init__(self, name, argv, ready=None, timeout=8.0, nofile=False):
        self.name, self.argv = name, argv
        self.log = tempfile.TemporaryFile()
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL,
                                  preexec_fn=_raise_nofile if nofile else None)
        deadline = time.monotonic() + timeout
        while ready is not None and not ready():
            if self.p.poll() is not None or time.monotonic() > deadline:
                out = self.output()
                self.stop()
                raise SetupError(f"{name} server did not come up: {' '.join(argv)}: {out[-300:]}")
            time.sleep(0.05)
        time.sleep(0.2)

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p.poll() is None

    def cpu_s(self):
        return tree_cpu_s(self.p.pid)

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self):
        stop_process(self.p)
        self.log.close()


def listening(ns, port, udp=False):
    out = sh("ip", "netns", "exec", ns, "ss", "-Hn", "-lu" if udp else "-lt",
             f"sport = :{port}", check=False).stdout
    return bool(out.strip())


class Timed:
    """What run_timed returns."""

    def __init__(self, rc, stdout, stderr, cpu_s, wall_s, timed_out):
        self.returncode, self.stdout, self.stderr = rc, stdout, stderr
        self.cpu_s, self.wall_s, self.timed_out = cpu_s, wall_s, timed_out


def run_timed(argv, timeout, nofile=False, during=None, during_at=None):
    """Run a client to completion (killed by its PID after `timeout` s) and return its output,
    wall time and exact CPU time (user+system of all its threads and waited-for children, from
    wait4's rusage). `during()` is called once, `during_at` seconds after the start (a
    mid-run observation such as `ss`), in this thread."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                         preexec_fn=_raise_nofile if nofile else None)
    timed_out, status, ru, called = False, None, None, during is None
    try:
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            now = time.monotonic() - t0
            if not called and now >= during_at:
                called = True
                try:
                    during()
                except Exception:  # an observation must never break the run
                    pass
            if now > timeout:
                timed_out = True
                os.kill(p.pid, signal.SIGKILL)
                _, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
    except BaseException:
        if p.returncode is None:
            try:
                os.kill(p.pid, signal.SIGKILL)
                os.wait4(p.pid, 0)
            except OSError:
                pass
        raise
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped by us: keep Popen consistent
    out.seek(0)
    err.seek(0)
    res = Timed(p.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), ru.ru_utime + ru.ru_stime, wall, timed_out)
    out.close()
    err.close()
    return res


# ───────────── host facts ─────────────

def read_proc_stat():
    """(idle CPU-seconds of all CPUs so far, monotonic time of the read, CPUs listed).

    The kernel times idle and iowait per idle stretch (tickless kernels) but samples the busy
    states once a tick, so bursts between ticks escape the busy counters: busy time over a
    span is CPUs x span less the idle, never the busy jiffies (wirebench's CPU figures are
    taken the same way; see crates/wirebench-stats/src/cpu.rs)."""
    t = time.monotonic()
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    v = [int(x) for x in lines[0].split()[1:]]
    cpus = sum(1 for ln in lines[1:] if ln.startswith("cpu"))
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return idle / CLK_TCK, t, cpus


def busy_cpu_s(before, after):
    """Busy CPU-seconds of all CPUs between two read_proc_stat() readings."""
    (i0, t0, n), (i1, t1, _) = before, after
    return max(0.0, n * (t1 - t0) - (i1 - i0))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def cpu_slug(model):
    s = re.sub(r"\((R|TM|tm|r)\)", "", model).lower()
    s = re.sub(r"\b(cpu|processor|with|radeon graphics)\b", " ", s)
    s = re.sub(r"@.*", "", s)
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s or "cpu"


def tool_version(argv):
    try:
        r = sh(*argv, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"? ({e})"
    text = (r.stdout + "\n" + r.stderr).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else "?"


def git_commit():
    try:
        head = sh("git", "-C", ROOT, "rev-parse", "--short=12", "HEAD").stdout.strip()
        dirty = sh("git", "-C", ROOT, "status", "--porcelain", "--", "crates", "Cargo.toml",
                   "Cargo.lock").stdout.strip()
        return head + (" + uncommitted changes in crates/" if dirty else "")
    except Exception as e:  # not a git checkout
        return f"? ({e})"
