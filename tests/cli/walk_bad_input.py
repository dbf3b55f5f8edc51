#!/usr/bin/env python3
"""Every command's bad input (issue #20, part 5): walks every `vramlab` subcommand and every lesson
binary, reads each one's flags and positionals from its own --help (so a flag added tomorrow is
walked too), and runs each with each hostile value: negative, zero, huge, NaN, infinities,
non-UTF-8 bytes, control characters (an escape sequence, a newline, a tab, a bell), empty, and
text where a number goes. A flag without a value gets one `--flag=VALUE` run.

Every run is bounded (BOUND_SECONDS) and must end in one of two ways:
  - exit 2, with exactly one line on stderr that names the value (its control characters shown as
    \\xNN, as vramlab::memory::printable writes them), or
  - the value was accepted (exit 0, or still running valid work at the bound: e.g. --steps 1e9),
    which is listed at the end so a reader can see what each flag takes.
Always, on stdout and stderr: no raw control character (bytes below 0x20 but the newline, and
0x7f), no crash (a signal, or exit 1 with an internal error), no exit code but 0 and 2 unless
the run ran out of (simulated) memory, which is a lesson, not bad input.

usage: walk_bad_input.py VRAMLAB [LESSON_BINARY...]
"""
import os
import re
import subprocess
import sys
import tempfile
import time

BOUND_SECONDS = 10.0

HOSTILE = [
    b"-1",
    b"0",
    b"-9223372036854775809",
    b"99999999999999999999",
    b"1e308",
    b"nan",
    b"-inf",
    b"\xff\xfe\x80",  # not UTF-8
    b"\x1b[2J\x1b[31mred",  # clears the screen and turns it red, if echoed raw
    b"two\nlines",
    b"tab\there\x07",
    b"",
    b"lots",
]
# A flag without a value gets only this one, as --flag=VALUE.
FLAG_VALUE = b"\x1b[31myes"


# Flags that exclude one of the base arguments below (estimate --params: no model).
EXCLUSIVE = {b"--params": [b"--model"]}
# Commands whose required positional (an exercise or lesson id) would make a run change the
# workbook (hint records the levels seen, reset restores a stub, run builds a lesson, solution
# marks it seen): walked without it, so their flags' values are parsed but a run may stop at the
# missing positional first (exit 2, one line, no raw control character: still checked).
POSITIONAL_LEFT_OUT = {b"hint", b"solution", b"reset", b"run"}


def printable(value: bytes) -> bytes:
    """The value as vramlab::memory::printable shows it."""
    return b"".join(b"\\x%02x" % c if c < 0x20 or c == 0x7F else bytes([c]) for c in value)


def names(stderr: bytes, value: bytes) -> bool:
    """Whether stderr names the value: as printable() shows it, or, for a number, any number in
    the message equal to it (a double may come back as 1e+20 for 99999999999999999999)."""
    if printable(value) in stderr:
        return True
    try:
        wanted = float(value)
    except ValueError:
        return False
    for number in re.findall(rb"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)", stderr):
        try:
            got = float(number)
        except ValueError:
            continue
        if got == wanted or (got != got and wanted != wanted):
            return True
    return False


def raw_controls(text: bytes) -> bytes:
    return bytes(c for c in text if (c < 0x20 and c != 0x0A) or c == 0x7F)


OPTION = re.compile(rb"^\s{2}(?:-\w,)?(--[\w-]+)(?:[ =](\S+))?")
POSITIONAL = re.compile(rb"^\s{2}([A-Za-z_][\w-]*)\s+(TEXT|INT|UINT|FLOAT)\b")
SUBCOMMAND = re.compile(rb"^\s{2}([a-z][\w-]*)\s{2,}\S")


def help_of(argv):
    out = subprocess.run(argv + [b"--help"], capture_output=True, timeout=30).stdout
    return out.splitlines()


def options_of(argv):
    """(flags taking a value, flags without one, positionals) from argv --help."""
    valued, bare, positionals, section = [], [], [], b""
    for line in help_of(argv):
        if line and not line.startswith(b" "):
            section = line.rstrip(b":")
            continue
        if section == b"Positionals":
            m = POSITIONAL.match(line)
            if m:
                positionals.append(m.group(1))
            continue
        m = OPTION.match(line)
        if not m or m.group(1) in (b"--help", b"--version"):
            continue
        (valued if m.group(2) and m.group(2)[:1].isupper() else bare).append(m.group(1))
    return valued, bare, positionals


def subcommands_of(vramlab):
    names, section = [], b""
    for line in help_of([vramlab]):
        if line and not line.startswith(b" "):
            section = line.rstrip(b":")
            continue
        m = SUBCOMMAND.match(line)
        if section == b"Subcommands" and m:
            names.append(m.group(1))
    return names


def main():
    vramlab = os.fsencode(os.path.abspath(sys.argv[1]))
    lessons = [os.fsencode(os.path.abspath(p)) for p in sys.argv[2:]]
    out_dir = tempfile.mkdtemp(prefix="vramlab_walk_")
    tiny = [b"--layers", b"1", b"--hidden", b"16", b"--heads", b"2", b"--vocab", b"32"]
    # Arguments that make a run with an accepted value small and quick; a flag under test takes
    # its own out of these. The workbook commands get a build directory of their own, so nothing
    # here builds or touches the learner's exercises.
    empty_build = tempfile.mkdtemp(prefix="vramlab_walk_build_")
    trace = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                         "alloc-traces", "pools.trace")
    base = {
        b"alloc": [b"--device", b"sim:1GiB", os.fsencode(os.path.abspath(trace))],
        b"train": tiny + [b"--seq", b"8", b"--batch", b"1", b"--steps", b"1", b"--threads", b"1",
                          b"--device", b"sim:1GiB"],
        b"estimate": [b"--model", b"gpt2-124m"],
        b"doctor": [b"--no-gemm"],
    }
    for workbook in (b"list", b"check", b"hint", b"solution", b"reset", b"watch", b"run",
                     b"verify"):
        base[workbook] = [b"--build-dir", os.fsencode(empty_build)]
    # Nothing may fall back to a real build directory.
    env = dict(os.environ, VRAMLAB_BUILD_DIR=empty_build)
    commands = [([vramlab, name], base.get(name, [])) for name in subcommands_of(vramlab)]
    commands += [([binary], [b"--out-dir", os.fsencode(out_dir)]) for binary in lessons]

    runs, accepted, failures = 0, [], []
    started = time.time()
    for argv, defaults in commands:
        valued, bare, positionals = options_of(argv)
        cases = [(flag, value) for flag in valued for value in HOSTILE]
        cases += [(flag, FLAG_VALUE) for flag in bare]
        cases += [(name, value) for name in positionals for value in HOSTILE]
        for flag, value in cases:
            is_positional = not flag.startswith(b"--")
            kept = list(defaults)
            if not is_positional and flag in kept:
                at = kept.index(flag)
                del kept[at : at + 2]
            for other in EXCLUSIVE.get(flag, []):
                if other in kept:
                    at = kept.index(other)
                    del kept[at : at + 2]
            if is_positional and argv[-1] == b"alloc":
                kept = kept[:-1]  # the trace is the positional under test
            if is_positional:
                args = argv + kept + [value]
            elif flag in bare:
                args = argv + kept + [flag + b"=" + value]
            else:
                args = argv + kept + [flag, value]
            runs += 1
            label = (b" ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv))
                     + b" " + flag + b" " + printable(value)).decode(errors="backslashreplace")
            try:
                run = subprocess.run(args, capture_output=True, timeout=BOUND_SECONDS,
                                     stdin=subprocess.DEVNULL, cwd=out_dir, env=env)
            except subprocess.TimeoutExpired as timed_out:  # the child is killed
                seen = (timed_out.stdout or b"") + (timed_out.stderr or b"")
                if raw_controls(seen):
                    failures.append(f"{label}: raw control characters in the output")
                accepted.append(f"{label} (still running at {BOUND_SECONDS:.0f} s)")
                continue
            problems = []
            both = run.stdout + run.stderr
            if raw_controls(both):
                problems.append(f"raw control characters {raw_controls(both)!r} in the output")
            if run.returncode == 2:
                lines = run.stderr.count(b"\n")
                if lines != 1 or not run.stderr.endswith(b"\n"):
                    problems.append(f"{lines} lines on stderr, not one")
                missing_first = (argv[-1] in POSITIONAL_LEFT_OUT and not is_positional and
                                 re.search(rb"is required|needs one", run.stderr))
                if value and not missing_first and not names(run.stderr, value):
                    problems.append("stderr does not name the value")
            elif run.returncode == 0:
                accepted.append(label)
            elif run.returncode == 1 and b"out of memory" in run.stderr.lower():
                accepted.append(f"{label} (ran out of memory: a lesson)")
            else:
                problems.append(f"exit {run.returncode}")
            if problems:
                failures.append(f"{label}: {'; '.join(problems)}\n    stderr: "
                                f"{run.stderr[-400:]!r}")
    elapsed = time.time() - started
    print(f"{runs} runs (command, flag, value) over {len(commands)} commands in {elapsed:.0f} s")
    print(f"{len(accepted)} values accepted:")
    for line in accepted:
        print(f"  {line}")
    if failures:
        print(f"{len(failures)} runs broke the contract:")
        for line in failures:
            print(f"  {line}")
        return 1
    print("PASS: every rejected value: exit 2, one line naming it, no raw control character")
    return 0


if __name__ == "__main__":
    sys.exit(main())
