#!/usr/bin/env python3
"""The kernel's receive copy against the user buffer's offset in its page.

One thread writes 64 KiB into a loopback TCP connection from a page-aligned buffer, then reads
it back with one recv(MSG_WAITALL) into a buffer starting OFFSET bytes past a page boundary;
only the recv is timed, so the figure is the kernel's copy from the socket's pages to user
memory (plus one system call). The receiver keeps up, so the kernel reuses its pages from
their start and the source is page-aligned: the offset alone sets the copy's distance
(destination minus source, modulo 4 KiB). Rounds interleave the offsets; the median of every
call per offset is printed, in GB/s (10^9 bytes/s), with the CPU model.

Usage: python3 bench/recv_copy_offset.py [--cpu N] [--rounds 30]
Nothing to set up; traffic stays on 127.0.0.1.
"""
import argparse
import mmap
import os
import socket
import statistics
import time

CALL = 64 * 1024
OFFSETS = [0, 4, 8, 16, 24, 28, 32, 48, 64, 128, 256, 1024, 2048, 4032, 4080, 4092]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    a = socket.create_connection(ls.getsockname())
    b, _ = ls.accept()
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    src = mmap.mmap(-1, CALL)
    src.write(os.urandom(CALL))
    dst = mmap.mmap(-1, CALL + 8192)
    rates = {o: [] for o in OFFSETS}
    for _ in range(args.rounds):
        for o in OFFSETS:
            view = memoryview(dst)[o:o + CALL]
            for _ in range(10):
                a.sendall(src)
                t0 = time.perf_counter_ns()
                got = b.recv_into(view, CALL, socket.MSG_WAITALL)
                t1 = time.perf_counter_ns()
                assert got == CALL, got
                rates[o].append(CALL / (t1 - t0))
            view.release()
    best = max(statistics.median(v) for v in rates.values())
    print(f"{cpu_model()}; {os.uname().release}; 64 KiB recv calls, median of {10 * args.rounds}")
    for o in OFFSETS:
        m = statistics.median(rates[o])
        print(f"buffer offset {o:4d}: {m:6.2f} GB/s ({best / m:4.1f}x the fastest's time)")


if __name__ == "__main__":
    main()
