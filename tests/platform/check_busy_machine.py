#!/usr/bin/env python3
"""A run beside a busy machine (issue #36): times a command alone and beside one busy loop per core,
alternating, and checks that the busy runs are slower by about the share of the cores they lose,
not many times more (which is what OpenMP threads that spin while they wait do: see
common/platform/passive_wait.cpp, Note [Passive OpenMP waiting]).

With one busy process per core beside a command that runs one thread per core, a fair scheduler
gives the command half of each core: twice its idle time. The check allows --max-slowdown (3x,
the bound issue #36 sets for the lessons) on the median of --rounds pairs.

usage: check_busy_machine.py [--rounds N] [--max-slowdown X] -- COMMAND [ARG...]
Prints each pair and the ratio; exit 0 when within the bound, 1 otherwise, 2 on bad usage.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time


def busy_loops(count):
    """count processes that each keep one core busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def timed(command):
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=600)
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="idle/busy pairs (default 3)")
    parser.add_argument("--max-slowdown", type=float, default=3.0,
                        help="largest allowed median busy/idle time ratio (default 3)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command or options.rounds < 1 or not options.max_slowdown > 1:
        parser.error("need a command after --, --rounds >= 1 and --max-slowdown > 1")
    cores = len(os.sched_getaffinity(0))
    print(f"{cores} cores; command: {' '.join(command)}")
    ratios = []
    for round_index in range(options.rounds):
        idle = timed(command)
        loops = busy_loops(cores)
        try:
            time.sleep(0.2)  # the loops are running before the command starts
            busy = timed(command)
        finally:
            for loop in loops:
                loop.send_signal(signal.SIGKILL)
                loop.wait()
        ratios.append(busy / idle)
        print(f"round {round_index + 1}: idle {idle:.2f} s, beside {cores} busy loops "
              f"{busy:.2f} s: {busy / idle:.2f}x")
    ratio = statistics.median(ratios)
    verdict = "PASS" if ratio <= options.max_slowdown else "FAIL"
    print(f"{verdict}: median slowdown {ratio:.2f}x beside a busy loop on every core "
          f"(fair share: 2x; bound {options.max_slowdown:g}x)")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
