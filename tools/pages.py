#!/usr/bin/env python3
"""Regenerates the program output that the docs pages show, or checks that it has not drifted.

    python3 tools/pages.py --write [--build-dir build] [PAGE ...]   rerun and rewrite the blocks
    python3 tools/pages.py --check [--build-dir build] [PAGE ...]   rerun and compare; exit 1 on drift
    python3 tools/pages.py --list                                   the blocks and their commands

A page marks each block of real output with the command that printed it, on the line before the
fence (an HTML comment: neither GitHub nor Doxygen shows it):

    <!-- output: build/bin/lesson09_optimizer_memory --out-dir lessons/09-optimizer-memory/figures -->
    ```text
    ...what the command prints on stdout...
    ```

A command that prints Markdown (a table) has no fence: its output runs from the marker to a line
`<!-- end output -->`. The command runs from the repository root; `build/` names the build
directory (--build-dir). In the output, the build directory's path is written `build` and a path
in the repository relative to its root. After the command:

    | sections: Title A; Title B   keep only those parts of the output, each from the line that
                                   starts with its title to the next blank line;
    | ignore: REGEX                one more thing, besides times, that --check lets differ (a
                                   count that depends on the compiler, a speed ratio).

--write replaces each block with a fresh run (and so regenerates the figures its command writes),
except that a line whose only change is its times keeps the page's, which the prose beside the
block quotes (--times takes the new run's everywhere). --check runs the same commands, an
--out-dir moved to a temporary folder (for the page's later blocks too, which may read what an
earlier one wrote), and compares each block with the output word by word, times aside (a number
followed by s, ms, us or min): every other number must match. PAGE limits the run to those files.

Every command runs with OpenBLAS's Haswell kernels (OPENBLAS_CORETYPE=Haswell on a CPU with
AVX2; blas_env()), whatever the machine: OpenBLAS's AVX-512 GEMM sums in another order, and the
pages' rounding-error figures would move with the machine that reruns them. The CPU kernels are
compiled for one instruction set for the same reason (Note [The same numbers on every machine]).
A lesson run by hand uses the machine's fastest kernels, so its last digits may differ.
"""
import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MARKER = re.compile(r"^<!-- output: (.+?) -->$")
END_MARKER = "<!-- end output -->"
RULE = re.compile(r"^\s*-{3,}\s*$")
OPTIONS = ("sections", "ignore")
FENCE = re.compile(r"^(`{3,}|~{3,})")
# A time, which changes from run to run: "3.09 s", "12 ms", "1.5 min", "(0.4 s)".
TIME = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|min)\b")
PAGE_GLOBS = ["README.md", "lessons/*/README.md", "lessons/*/EXERCISES.md", "exercises/README.md",
              "docs/pages/*.md", "docs/design/*.md"]


class Block:
    def __init__(self, page, marker_line, start, end, command, options):
        self.page, self.marker_line = page, marker_line
        self.start, self.end = start, end  # the block's lines are lines[start:end]
        self.command = command
        self.sections = [s.strip() for s in options.get("sections", "").split(";") if s.strip()]
        self.ignore = re.compile(options["ignore"]) if "ignore" in options else None

    def where(self, root):
        return f"{self.page.relative_to(root)}:{self.marker_line + 1}"


def find_blocks(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    fence_open = None  # the fence of a code block being passed over (its markers are examples)
    for i, line in enumerate(lines):
        fence = FENCE.match(line)
        if fence_open:
            if fence and line.strip() == fence_open:
                fence_open = None
            continue
        if fence:
            fence_open = fence.group(1)
            continue
        m = MARKER.match(line.strip())
        if not m:
            continue
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence:
            start, end = i + 2, i + 2
            while end < len(lines) and not lines[end].startswith(fence.group(1)):
                end += 1
            if end == len(lines):
                raise SystemExit(f"{page}:{i + 2}: the code fence is never closed")
        else:  # Markdown the command prints (a table), up to the end marker
            start, end = i + 1, i + 1
            while end < len(lines) and lines[end].strip() != END_MARKER:
                end += 1
            if end == len(lines):
                raise SystemExit(f"{page}:{i + 1}: an output marker must be followed by a code "
                                 f"fence, or by Markdown and a line {END_MARKER}")
        command, *parts = m.group(1).split(" | ")
        options = {}
        for part in parts:
            key, _, value = part.partition(": ")
            if key not in OPTIONS or not value:
                raise SystemExit(f"{page}:{i + 1}: unknown marker option {part!r} "
                                 f"(known: {', '.join(OPTIONS)})")
            options[key] = value
        blocks.append(Block(page, i, start, end, command, options))
    return lines, blocks


def blas_env():
    """The environment that pins OpenBLAS's kernel set for the pages' commands (module comment):
    Haswell's on a CPU with AVX2, nothing on one without (which cannot run them)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            avx2 = any(line.startswith("flags") and " avx2" in line for line in cpuinfo)
    except OSError:
        avx2 = False
    return {"OPENBLAS_CORETYPE": "Haswell"} if avx2 else {}

def run(block, root, build_dir, moved_dirs=None):
    """The command's stdout. With moved_dirs (check mode), an --out-dir is moved to a temporary
    folder, and a path an earlier block of the page moved is moved for this block too (a later
    block may read what an earlier one wrote); the output names the original paths."""
    words = shlex.split(block.command)
    env = dict(os.environ, **blas_env())
    while words and re.match(r"^[A-Z_]+=", words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if words and words[0].startswith("build/"):
        words[0] = str(build_dir / words[0][len("build/"):])
    if moved_dirs is not None:
        if "--out-dir" in words[:-1]:
            i = words.index("--out-dir") + 1
            if words[i] not in moved_dirs:
                moved_dirs[words[i]] = tempfile.mkdtemp(prefix="vramlab-pages-")
        words = [moved_dirs.get(word, word) for word in words]
    try:
        result = subprocess.run(words, cwd=root, env=env, capture_output=True, text=True,
                                timeout=900)
    except FileNotFoundError:
        raise SystemExit(f"{block.where(root)}: {words[0]} does not exist (build it first)")
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{block.where(root)}: `{block.command}` ran for over 900 s")
    if result.returncode != 0:
        raise SystemExit(f"{block.where(root)}: `{block.command}` exited {result.returncode}:\n"
                         + result.stderr[-2000:])
    out = result.stdout
    for original, temporary in (moved_dirs or {}).items():
        out = out.replace(temporary, original)
    out = out.replace(str(build_dir), "build").replace(str(root) + "/", "")
    lines = [line.rstrip() for line in out.splitlines()]
    if block.sections:
        lines = select_sections(lines, block.sections, block.where(root))
    while lines and not lines[-1]:
        lines.pop()
    return lines


def select_sections(lines, titles, where):
    kept = []
    for title in titles:
        starts = [i for i, line in enumerate(lines) if line.startswith(title)]
        if not starts:
            raise SystemExit(f"{where}: the output has no section starting with {title!r}")
        end = starts[0]
        while end < len(lines) and lines[end].strip():
            end += 1
        kept += ([""] if kept else []) + lines[starts[0]:end]
    return kept


def comparable(lines, ignore):
    """Each line as --check compares it: times, what ignore names and a table's rule (as wide as
    its columns, which a column of times widens) masked, runs of spaces made one."""
    masked = ["<rule>" if RULE.match(line) else TIME.sub("<time>", line) for line in lines]
    if ignore is not None:
        masked = [ignore.sub("<ignored>", line) for line in masked]
    return [" ".join(line.split()) for line in masked]


def keep_times(shown, fresh, ignore):
    """fresh, except that a line equal to the page's but for its times (and what ignore names),
    and as long (so a table's columns stay aligned), stays as the page has it."""
    a, b = comparable(shown, ignore), comparable(fresh, ignore)
    merged = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            merged += fresh[j1:j2]
            continue
        merged += [old if len(old) == len(new) else new
                   for old, new in zip(shown[i1:i2], fresh[j1:j2])]
    return merged


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rerun and rewrite every block")
    mode.add_argument("--check", action="store_true", help="rerun and fail on a block that drifted")
    mode.add_argument("--list", action="store_true", help="list the blocks and their commands")
    mode.add_argument("--self-test", action="store_true",
                      help="show that --check catches an edited number and --write repairs it")
    parser.add_argument("--build-dir", default="build", help="the build directory (default: build)")
    parser.add_argument("--times", action="store_true",
                        help="with --write, take every line from the new run, times included "
                             "(by default a line that differs only in its times is kept)")
    parser.add_argument("pages", nargs="*", help="only these pages")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent),
                        help=argparse.SUPPRESS)  # the repository (the self-test's own folder)
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = Path(args.root).resolve()
    build_dir = Path(args.build_dir).resolve()
    if args.pages:
        pages = [Path(p).resolve() for p in args.pages]
        for p in pages:
            if not p.is_file():
                print(f"pages.py: no such page: {p}", file=sys.stderr)
                return 2
    else:
        pages = sorted({p for g in PAGE_GLOBS for p in root.glob(g)})

    drifted = 0
    count = 0
    for page in pages:
        lines, blocks = find_blocks(page)
        if not blocks:
            continue
        moved = {}  # --check: each --out-dir of the page's commands -> a temporary folder
        replacements = []  # --write: (block, new lines), applied bottom-up once all have run
        for block in blocks:
            count += 1
            if args.list:
                print(f"{block.where(root)}: {block.command}"
                      + (f"  [sections: {'; '.join(block.sections)}]" if block.sections else ""))
                continue
            shown = [line.rstrip() for line in lines[block.start:block.end]]
            if args.write:
                fresh = run(block, root, build_dir)
                merged = fresh if args.times else keep_times(shown, fresh, block.ignore)
                if merged == shown:
                    print(f"same     {block.where(root)}", file=sys.stderr)
                    continue
                replacements.append((block, merged))
                print(f"wrote    {block.where(root)}", file=sys.stderr)
                continue
            fresh = run(block, root, build_dir, moved)
            a, b = comparable(shown, block.ignore), comparable(fresh, block.ignore)
            if a == b:
                print(f"ok       {block.where(root)}: {block.command}")
                continue
            drifted += 1
            print(f"DRIFTED  {block.where(root)}: {block.command}")
            # The lines that differ beyond times, as the page has them (-) and as printed now (+).
            shown_lines = 0
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
                if tag == "equal" or shown_lines > 40:
                    continue
                print(f"@@ page line {block.start + i1 + 1}")
                for line in shown[i1:i2]:
                    print(f"- {line}")
                for line in fresh[j1:j2]:
                    print(f"+ {line}")
                shown_lines += i2 - i1 + j2 - j1
        for block, merged in reversed(replacements):
            lines[block.start:block.end] = merged
        if args.write:
            page.write_text("\n".join(lines) + "\n", encoding="utf-8")
        for temporary in moved.values():
            shutil.rmtree(temporary, ignore_errors=True)
    if args.check:
        if drifted:
            print(f"{drifted} of {count} output blocks differ from what their commands print now "
                  "(times aside): python3 tools/pages.py --write rewrites them", file=sys.stderr)
            return 1
        print(f"{count} output blocks are what their commands print now (times aside)")
    return 0


def self_test():
    """A page whose block a small Python program prints: in step, drifted, repaired."""
    program = ("import sys; n = sys.argv[1]; print('-' * 12); "
               "print(f'bytes {n} MiB in 0.{n}3 s'); print('speed 2.5x'); print(); print('tail')")
    with tempfile.TemporaryDirectory(prefix="vramlab-pages-self-test-") as tmp:
        root = Path(tmp)
        (root / "build").mkdir()
        page = root / "page.md"
        command = f"{sys.executable} -c {shlex.quote(program)} 7 | ignore: [\\d.]+x"
        block = ["-" * 11, "bytes 7 MiB in 0.13 s", "speed 1.5x", "", "tail"]
        page.write_text("\n".join(["# Page", "", f"<!-- output: {command} -->", "```text", *block,
                                   "```", ""]), encoding="utf-8")

        def check():
            return subprocess.run([sys.executable, __file__, "--check", "--root", tmp,
                                   "--build-dir", str(root / "build"), str(page)],
                                  capture_output=True, text=True).returncode

        failures = []
        if check() != 0:
            failures.append("a block that differs only in its time, the width of its rule and an "
                            "ignored ratio drifted")
        page.write_text(page.read_text().replace("bytes 7 MiB", "bytes 8 MiB"), encoding="utf-8")
        if check() != 1:
            failures.append("an edited number was not caught")
        subprocess.run([sys.executable, __file__, "--write", "--root", tmp, "--build-dir",
                        str(root / "build"), str(page)], capture_output=True, check=True)
        text = page.read_text()
        if "bytes 7 MiB in 0.73 s" not in text or "speed 1.5x" not in text or check() != 0:
            failures.append("--write did not restore the line (with the new time) and keep the "
                            f"unchanged one:\n{text}")
        (root / "bad.md").write_text("<!-- output: true -->\nno fence\n", encoding="utf-8")
        bad = subprocess.run([sys.executable, __file__, "--check", "--root", tmp,
                              str(root / "bad.md")], capture_output=True, text=True)
        if bad.returncode == 0 or "code fence" not in bad.stderr:
            failures.append("a marker without a code block was accepted")
    for failure in failures:
        print(f"self-test: {failure}", file=sys.stderr)
    if not failures:
        print("self-test: 4 rules hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
