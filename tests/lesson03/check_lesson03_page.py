#!/usr/bin/env python3
"""Lesson 03's page quotes the lesson binary's tables. The byte counts per category (the default
run and the at-scale table) and the format table do not depend on the machine's load or on the
training itself: this re-runs the default settings on the meta device, where every precision holds
exactly the bytes it holds on a simulated GPU, and fails when a line of those tables is no longer
on the page. (The static-scale row is left out: on meta no gradient overflows, so its optimizer
states exist there and not on sim.)

    check_lesson03_page.py REPO LESSON03
"""
import atexit
import shutil
import subprocess
import sys
import tempfile

# The lesson's files go to a directory of this run's own, so two builds can check at once.
OUT_DIR = tempfile.mkdtemp(prefix="vramlab-check-lesson03-page-")
atexit.register(shutil.rmtree, OUT_DIR, ignore_errors=True)

SECTIONS = ("Bytes per category", "At scale on meta", "Formats (from their bit layouts)")


def table_lines(text):
    """The header and rows of each table in SECTIONS (up to the first note or blank line)."""
    lines, taking = [], False
    for line in text.splitlines():
        if any(line.startswith(s) for s in SECTIONS):
            taking = True
            lines.append(line)
            continue
        if taking and (not line or line.startswith("  ")):
            taking = False
        if taking and not line.startswith("mixed-fp16, static:") and not line.startswith("---"):
            lines.append(line)
    return lines


def main():
    repo, lesson = sys.argv[1:3]
    page = open(f"{repo}/lessons/03-mixed-precision/README.md", encoding="utf-8").read()
    argv = [lesson, "--device", "meta", "--steps", "1", "--no-accumulation", "--out-dir",
            OUT_DIR]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=240).stdout
    expected = table_lines(out)
    if len(expected) < 15:
        print(f"only {len(expected)} table lines found in the binary's output:\n{out}",
              file=sys.stderr)
        return 1
    missing = [line for line in expected if line.rstrip() not in page]
    for line in expected:
        print(f"{'MISSING' if line in missing else 'ok     '}  {line}")
    if missing:
        print(f"lesson 03's page does not quote {len(missing)} line(s) the binary prints now; "
              "re-run the default command and update its Real output", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
