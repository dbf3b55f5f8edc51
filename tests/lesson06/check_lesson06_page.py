#!/usr/bin/env python3
"""Lesson 06's page quotes the lesson binary's tables. The bytes do not depend on the machine's
load: this re-runs the default sweep and the at-scale table on the meta device, which allocates
exactly the tensors a simulated GPU allocates, and fails when the page no longer shows them:
the memory columns of each sweep row (T, naive peak, flash peak, ratio, att saved, lse saved), the
README-ratio rows, every row of the at-scale table and the tiling line. Times and differences
are left out: they change from run to run.

    check_lesson06_page.py REPO LESSON06
"""
import atexit
import shutil
import subprocess
import sys
import tempfile

# The lesson's files go to a directory of this run's own, so two builds can check at once.
OUT_DIR = tempfile.mkdtemp(prefix="vramlab-check-lesson06-page-")
atexit.register(shutil.rmtree, OUT_DIR, ignore_errors=True)


def section(text, title):
    """The table rows under the line starting with title (up to the first note or blank line)."""
    rows, taking = [], False
    for line in text.splitlines():
        if line.startswith(title):
            taking = True
            continue
        if not taking:
            continue
        first = line.split()[0] if line.strip() else ""
        if first in ("T", "#") or first.startswith("---"):
            continue  # the header and its rule (right-aligned, so indented like a note)
        if not first.isdigit():
            break  # a blank line or the note under the table
        rows.append(line)
    return rows


def tokens(line):
    return [t.rstrip("*") for t in line.split()]


def main():
    repo, lesson = sys.argv[1:3]
    page = open(f"{repo}/lessons/06-flash-attention/README.md", encoding="utf-8").read()
    argv = [lesson, "--device", "meta", "--no-training", "--out-dir",
            OUT_DIR]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=240).stdout
    page_rows = [tokens(line) for line in page.splitlines() if line.strip()]
    checks = []
    # T, naive peak (2 tokens), flash peak (2), ratio, att saved (2), lse saved (2).
    for line in section(out, "The attention core"):
        checks.append(("sweep", tokens(line)[:10]))
    for title in ("Against the FlashAttention README", "At scale on meta"):
        for line in section(out, title):
            checks.append((title, tokens(line)))
    tiling = [line for line in out.splitlines() if line.startswith("Tiling of one")]
    if len(checks) < 8 or len(tiling) != 1:
        print(f"only {len(checks)} table rows found in the binary's output:\n{out}",
              file=sys.stderr)
        return 1
    missing = 0
    for name, expected in checks:
        found = any(row[:len(expected)] == expected for row in page_rows)
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  {name}: {' '.join(expected)}")
    found = tiling[0] in page
    missing += not found
    print(f"{'ok     ' if found else 'MISSING'}  {tiling[0]}")
    if missing:
        print(f"lesson 06's page does not quote {missing} line(s) the binary prints now; re-run "
              "the default command and update its Real output", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
