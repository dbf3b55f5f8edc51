#!/usr/bin/env python3
"""Every command's bad input (issue #20, part 5): walks every `vramlab` subcommand and every lesson
binary, reads each one's flags and positionals from its own --help (so a flag added tomorrow is
walked too), and runs each with each hostile value: negative, zero, huge, NaN, infinities,
non-UTF-8 bytes, control characters (an escape sequence, a newline, a tab, a bell), empty, and
text where a number goes. A flag without a value gets one `--flag=VALUE` run.

Every run is bounded and must end in one of two ways:
  - exit 2, with exactly one line on stderr that names the value (its control characters shown as
    \\xNN, as vramlab::platform::printable writes them), or
  - the value was accepted (exit 0, or still running valid work at the bound: e.g. --steps 1e9),
    which is listed at the end so a reader can see what each flag takes.
The bound is CPU time (--cpu-seconds, 1 s; RLIMIT_CPU kills the run with SIGXCPU), not wall time,
so a loaded machine cannot turn a slow rejection into an acceptance, and a run that sleeps is cut
by a wall-time backstop (--wall-seconds). A run still alive at the bound has passed parsing: that
is the contract the walk checks, every value validated before any work or progress output, and
validating takes milliseconds, not a second of CPU. So an accepted value costs at most the bound;
runs go --jobs at a time (2 by default), and --part K/N deals every N-th case to one walk, which
is how ctest runs it: four parts, one run at a time each, spread over its -j2 (tests/cli).
Always, on stdout and stderr: no raw control character (bytes below 0x20 but the newline, and
0x7f), no crash (a signal, or exit 1 with an internal error), no exit code but 0 and 2 unless
the run ran out of (simulated) memory, which is a lesson, not bad input.

usage: walk_bad_input.py [--jobs N] [--cpu-seconds S] [--wall-seconds S] [--part K/N]
                         [--slice] [--lessons-only] VRAMLAB [LESSON_BINARY...]
  --slice: three of the values per flag, one of each kind, turning from flag to flag (the README's
  test command; CI walks them all).
  --lessons-only: walk the lesson binaries given, not VRAMLAB's subcommands.
"""
import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

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

# --slice: the README's test command walks every flag with three values, one of each kind that
# has broken a flag before (a control character echoed raw, a number read wrong, text where a
# number goes or nothing at all), turning through each kind from flag to flag so that every
# value of HOSTILE is still used across the commands. CI walks every flag with all of them.
SLICE_KINDS = [
    [b"\x1b[2J\x1b[31mred", b"two\nlines", b"tab\there\x07"],
    [b"-1", b"0", b"-9223372036854775809", b"99999999999999999999", b"1e308", b"nan", b"-inf"],
    [b"\xff\xfe\x80", b"", b"lots"],
]
assert sorted(v for kind in SLICE_KINDS for v in kind) == sorted(HOSTILE)


def slice_values(index):
    """The values --slice gives the index-th flag or positional of a command."""
    return [kind[index % len(kind)] for kind in SLICE_KINDS]


# Flags that exclude one of the base arguments below (estimate --params: no model).
EXCLUSIVE = {b"--params": [b"--model"]}
# Commands whose required positional (an exercise or lesson id) would make a run change the
# workbook (hint records the levels seen, reset restores a stub, run builds a lesson, solution
# marks it seen): walked without it, so their flags' values are parsed but a run may stop at the
# missing positional first (exit 2, one line, no raw control character: still checked).
POSITIONAL_LEFT_OUT = {b"hint", b"solution", b"reset", b"run"}


# Commands whose base arguments end in a positional (a trace, a snapshot), and the flags that take
# its place (`vramlab profile --compare A B` instead of SNAPSHOT).
LAST_IS_POSITIONAL = {b"alloc", b"profile"}
EXCLUSIVE_OF_POSITIONAL = {b"--compare"}
# The workbook commands run against an empty build directory (nothing is built, no exercise
# touched): a value they accept stops there, with this message, after every value was parsed and
# checked. That is the end of an accepted value's run, not a rejection.
NO_BUILD = re.compile(rb"no configured build in ")


def printable(value: bytes) -> bytes:
    """The value as vramlab::platform::printable shows it."""
    return b"".join(b"\\x%02x" % c if c < 0x20 or c == 0x7F else bytes([c]) for c in value)


def names(stderr: bytes, value: bytes) -> bool:
    """Whether stderr names the value: as printable() shows it, or, for a number, any number in
    the message equal to it to the 6 significant digits %g prints (a double may come back as
    1e+20 for 99999999999999999999)."""
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
        # %g shows 6 significant digits: -9223372036854775809 comes back as -9.22337e+18.
        if got == wanted or (got != got and wanted != wanted):
            return True
        if abs(got - wanted) <= 5e-6 * abs(wanted) and got == got:
            return True
    return False


def raw_controls(text: bytes) -> bytes:
    return bytes(c for c in text if (c < 0x20 and c != 0x0A) or c == 0x7F)


OPTION = re.compile(rb"^\s{2}(?:-\w,)?(--[\w-]+)(?:[ =](\S+)(?: x (\d+))?)?")
POSITIONAL = re.compile(rb"^\s{2}([A-Za-z_][\w-]*)\s+(TEXT|INT|UINT|FLOAT)\b")
SUBCOMMAND = re.compile(rb"^\s{2}([a-z][\w-]*)\s{2,}\S")


def help_of(argv):
    out = subprocess.run(argv + [b"--help"], capture_output=True, timeout=30).stdout
    return out.splitlines()


def options_of(argv):
    """(flags taking a value, flags without one, positionals, {flag: values it takes when more
    than one, `--compare TEXT x 2`}) from argv --help."""
    valued, bare, positionals, section, arity = [], [], [], b"", {}
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
        if m.group(3):
            arity[m.group(1)] = int(m.group(3))
    return valued, bare, positionals, arity


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



def base_arguments(out_dir, empty_build, snapshot):
    """Arguments that make a run with an accepted value small and quick, per command (a vramlab
    subcommand's name or a lesson binary's name up to its first '_'); a flag under test takes its
    own out of these. The workbook commands get a build directory of their own, so nothing here
    builds or touches the learner's exercises."""
    tiny = [b"--layers", b"1", b"--hidden", b"16", b"--heads", b"2", b"--vocab", b"32"]
    trace = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                         "alloc-traces", "pools.trace")
    out = [b"--out-dir", os.fsencode(out_dir)]
    base = {
        b"profile": [b"--top", b"3", os.fsencode(snapshot)],
        b"alloc": [b"--device", b"sim:1GiB", os.fsencode(os.path.abspath(trace))],
        b"train": tiny + [b"--seq", b"8", b"--batch", b"1", b"--steps", b"1", b"--threads", b"1",
                          b"--device", b"sim:1GiB"],
        b"estimate": [b"--model", b"gpt2-124m"],
        b"maxbatch": tiny + [b"--seq", b"8", b"--device", b"meta:1GiB", b"--max-trials", b"2",
                             b"--steps-per-trial", b"2"],
        b"plan": tiny + [b"--seq", b"8", b"--device", b"t4-16g", b"--recomputes", b"none",
                         b"--zero", b"0"],
        b"diagnose": [b"--message", b"CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a "
                      b"total capacity of 1.00 GiB of which 0 bytes is free. Of the allocated "
                      b"memory 1.00 GiB is allocated by PyTorch, and 0 bytes is reserved by "
                      b"PyTorch but unallocated."],
        b"doctor": [b"--no-gemm"],
        # The lessons: their smallest model on meta (nothing allocated) or a small sim device,
        # without the at-scale tables, so an accepted value mostly ends before the bound.
        b"lesson01": out + [b"--batch", b"1", b"--seq", b"8", b"--device", b"meta"],
        b"lesson02": out + [b"--batch", b"1", b"--seq", b"8", b"--steps", b"1", b"--layers",
                            b"2", b"--max-batch-device", b"none", b"--no-scale",
                            b"--no-compression"],
        b"lesson03": out + tiny + [b"--batch", b"1", b"--seq", b"8", b"--steps", b"1",
                                   b"--no-scale", b"--no-accumulation"],
        # --simulated: the ranks are threads of the one process, so a run is not mpirun's (whose
        # OpenMPI leaks at exit stop an ASan run; tests/dist runs mpirun on its own terms).
        b"lesson04": out + [b"--batch", b"1", b"--seq", b"8", b"--steps", b"1", b"--ranks", b"2",
                            b"--simulated", b"--no-scale"],
        b"lesson05": out + [b"--batch", b"1", b"--seq", b"8", b"--steps", b"2", b"--sweep-model",
                            b"gpt2-124m", b"--sweep-seq", b"64", b"--links", b"8", b"--no-scale",
                            b"--dpu-steps", b"3", b"--dpu-from", b"2"],
        b"lesson06": out + [b"--seqs", b"16", b"--batch", b"1", b"--no-training", b"--no-scale"],
        b"lesson07": out + [b"--batch", b"1", b"--seq", b"8", b"--steps", b"2", b"--no-scale"],
        b"lesson09": out + [b"--batch", b"1", b"--seq", b"8", b"--steps", b"1", b"--optimizers",
                            b"sgd", b"--no-scale"],
    }
    for workbook in (b"list", b"check", b"hint", b"solution", b"reset", b"watch", b"run",
                     b"verify"):
        base[workbook] = [b"--build-dir", os.fsencode(empty_build)]
    return base


def arguments(argv, defaults, flag, value, bare, arity):
    """The command line of one case: argv, the base arguments the flag under test leaves, then
    the flag (or positional) with the value (given as each of the values of a flag that takes
    several, so the run reaches the value rather than stopping at their count)."""
    is_positional = not flag.startswith(b"--")
    kept = list(defaults)
    if not is_positional and flag in kept:
        at = kept.index(flag)
        # A base flag without a value (--no-scale) is one word, a valued one two.
        del kept[at : at + (1 if flag in bare else 2)]
    for other in EXCLUSIVE.get(flag, []):
        if other in kept:
            at = kept.index(other)
            del kept[at : at + 2]
    if argv[-1] in LAST_IS_POSITIONAL and (is_positional or flag in EXCLUSIVE_OF_POSITIONAL):
        kept = kept[:-1]  # the trace or snapshot is the positional under test, or excluded
    if is_positional:
        return argv + kept + [value]
    if flag in bare:
        return argv + kept + [flag + b"=" + value]
    return argv + kept + [flag] + [value] * arity.get(flag, 1)


def judge(argv, flag, value, returncode, stdout, stderr, bound_hit):
    """(accepted label or None, problems) for one finished run."""
    problems = []
    both = stdout + stderr
    if raw_controls(both):
        problems.append(f"raw control characters {raw_controls(both)!r} in the output")
    if bound_hit:
        return "still running at the bound", problems
    if returncode == 2 and NO_BUILD.search(stderr) and not names(stderr, value):
        return "stopped at the walk's empty build directory", problems
    if returncode == 2:
        lines = stderr.count(b"\n")
        if lines != 1 or not stderr.endswith(b"\n"):
            problems.append(f"{lines} lines on stderr, not one")
        is_positional = not flag.startswith(b"--")
        missing_first = (argv[-1] in POSITIONAL_LEFT_OUT and not is_positional and
                         re.search(rb"is required|needs one", stderr))
        if value and not missing_first and not names(stderr, value):
            problems.append("stderr does not name the value")
        return None, problems
    if returncode == 0:
        return "", problems
    if returncode == 1 and b"out of memory" in stderr.lower():
        return "ran out of memory: a lesson", problems
    if returncode < 0:
        problems.append(f"killed by signal {-returncode}")
    else:
        problems.append(f"exit {returncode}")
    return None, problems


class Run:
    """One case's process: its output in files (no pipe to drain while others run)."""

    def __init__(self, label, argv, flag, value, args, cwd, env, cpu_seconds, scratch):
        self.label, self.argv, self.flag, self.value = label, argv, flag, value
        self.out = tempfile.TemporaryFile(dir=scratch)
        self.err = tempfile.TemporaryFile(dir=scratch)

        def limits():  # in the child, before exec: the CPU bound, and no core file at SIGXCPU
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.started = time.monotonic()
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.out,
                                        stderr=self.err, cwd=cwd, env=env, preexec_fn=limits,
                                        start_new_session=True)
        self.wall_hit = False

    def finished(self, wall_seconds):
        if self.process.poll() is not None:
            return True
        if time.monotonic() - self.started > wall_seconds:
            self.wall_hit = True
            os.killpg(self.process.pid, signal.SIGKILL)  # its children too (run, verify: cmake)
            self.process.wait()
            return True
        return False

    def result(self):
        self.out.seek(0)
        self.err.seek(0)
        stdout, stderr = self.out.read(), self.err.read()
        self.out.close()
        self.err.close()
        code = self.process.returncode
        bound_hit = self.wall_hit or code == -signal.SIGXCPU
        how, problems = judge(self.argv, self.flag, self.value, code, stdout, stderr, bound_hit)
        return how, problems, stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    parser.add_argument("--cpu-seconds", type=int, default=1,
                        help="CPU seconds a run may use before it counts as accepted (default 1)")
    parser.add_argument("--wall-seconds", type=float, default=20.0,
                        help="wall seconds a run may take before it counts as accepted (a run "
                             "that waits without using CPU; default 20)")
    parser.add_argument("--part", default="1/1",
                        help="K/N: only every N-th case, from the K-th (ctest runs the parts as "
                             "separate tests, which its -j spreads over the cores)")
    parser.add_argument("--slice", action="store_true",
                        help="three values per flag, one of each kind, instead of all of them "
                             "(the README's test command; CI walks them all)")
    parser.add_argument("--lessons-only", action="store_true",
                        help="walk the lesson binaries given, not vramlab's subcommands")
    parser.add_argument("vramlab")
    parser.add_argument("lessons", nargs="*")
    options = parser.parse_args()
    if options.jobs < 1 or options.cpu_seconds < 1 or not options.wall_seconds > 0:
        parser.error("--jobs, --cpu-seconds and --wall-seconds must be positive")
    part = re.fullmatch(r"(\d+)/(\d+)", options.part)
    if not part or not 1 <= int(part.group(1)) <= int(part.group(2)):
        parser.error(f"--part {options.part!r}: expected K/N with 1 <= K <= N")

    vramlab = os.fsencode(os.path.abspath(options.vramlab))
    lessons = [os.fsencode(os.path.abspath(p)) for p in options.lessons]
    out_dir = tempfile.mkdtemp(prefix="vramlab_walk_")
    empty_build = tempfile.mkdtemp(prefix="vramlab_walk_build_")
    scratch = tempfile.mkdtemp(prefix="vramlab_walk_output_")
    try:
        return walk(options, vramlab, lessons, out_dir, empty_build, scratch)
    finally:
        for folder in (out_dir, empty_build, scratch):
            shutil.rmtree(folder, ignore_errors=True)


def walk(options, vramlab, lessons, out_dir, empty_build, scratch):
    part_index, part_count = (int(n) for n in options.part.split("/"))
    # A snapshot for `vramlab profile` to read, from the smallest training run.
    snapshot = os.path.join(out_dir, "walk_profile", "snapshot.pickle")
    subprocess.run([vramlab, b"train", b"--layers", b"1", b"--hidden", b"16", b"--heads", b"2",
                    b"--vocab", b"32", b"--seq", b"8", b"--batch", b"1", b"--steps", b"1",
                    b"--threads", b"1", b"--device", b"sim:1GiB", b"--profile",
                    os.fsencode(os.path.dirname(snapshot))], check=True, capture_output=True,
                   timeout=120)
    base = base_arguments(out_dir, empty_build, snapshot)
    # Nothing may fall back to a real build directory.
    env = dict(os.environ, VRAMLAB_BUILD_DIR=empty_build)
    commands = []
    if not options.lessons_only:
        commands += [([vramlab, name], base.get(name, [])) for name in subcommands_of(vramlab)]
    for binary in lessons:
        commands.append(([binary], base.get(os.path.basename(binary).split(b"_")[0], [])))

    cases = []
    for argv, defaults in commands:
        valued, bare, positionals, arity = options_of(argv)
        takes_values = valued + positionals
        flags = [(flag, value) for i, flag in enumerate(takes_values)
                 for value in (slice_values(i) if options.slice else HOSTILE)]
        flags += [(flag, FLAG_VALUE) for flag in bare]
        for flag, value in flags:
            label = (b" ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv))
                     + b" " + flag + b" " + printable(value)).decode(errors="backslashreplace")
            cases.append((label, argv, flag, value, arguments(argv, defaults, flag, value, bare, arity)))

    # Interleaved, so every part walks every command and the parts take about as long.
    cases = cases[part_index - 1 :: part_count]
    accepted, failures = [], []
    started = time.time()
    pending, running = list(reversed(cases)), []
    while pending or running:
        while pending and len(running) < options.jobs:
            label, argv, flag, value, args = pending.pop()
            running.append(Run(label, argv, flag, value, args, out_dir, env,
                               options.cpu_seconds, scratch))
        done = [run for run in running if run.finished(options.wall_seconds)]
        if not done:
            time.sleep(0.005)
            continue
        for run in done:
            running.remove(run)
            how, problems, stderr = run.result()
            if how is not None:
                accepted.append(run.label + (f" ({how})" if how else ""))
            if problems:
                failures.append(f"{run.label}: {'; '.join(problems)}\n    stderr: "
                                f"{stderr[-400:]!r}")
    elapsed = time.time() - started
    print(f"{len(cases)} runs (command, flag, value; part {options.part}"
          f"{', the slice' if options.slice else ''}) over {len(commands)} "
          f"commands in {elapsed:.0f} s, {options.jobs} at a time")
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
