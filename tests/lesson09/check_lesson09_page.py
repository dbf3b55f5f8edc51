#!/usr/bin/env python3
"""Lesson 09's page quotes the lesson binary's tables. The bytes do not depend on the machine:
this re-runs the lesson on the meta device (which allocates exactly the tensors a simulated GPU
allocates) for one step, and fails when the page no longer shows them: every row of the
"What each optimizer keeps" table, every row of the at-scale tables, and the measured value of
each claim that rests on bytes alone. Losses, times and quantisation errors are left out: they
come from the training run, which meta does not compute.

    check_lesson09_page.py REPO LESSON09
"""
import atexit
import json
import shutil
import subprocess
import sys
import tempfile

# The lesson's files go to a directory of this run's own, so two builds can check at once.
OUT_DIR = tempfile.mkdtemp(prefix="vramlab-check-lesson09-page-")
atexit.register(shutil.rmtree, OUT_DIR, ignore_errors=True)

BYTE_CLAIMS = {108, 109, 110, 111, 114, 115, 116, 117, 118}


def section(text, title):
    """The table rows under the line starting with title, up to the note under the table."""
    rows, taking, past_rule = [], False, False
    for line in text.splitlines():
        if line.startswith(title):
            taking, past_rule = True, False
            continue
        if not taking:
            continue
        if line.startswith("---"):
            past_rule = True
            continue
        if not past_rule:
            continue  # the header
        if not line.strip() or line.startswith("  "):
            taking = False  # a blank line or the note under the table
            continue
        rows.append(line)
    return rows


def main():
    repo, lesson = sys.argv[1:3]
    page = open(f"{repo}/lessons/09-optimizer-memory/README.md", encoding="utf-8").read()
    argv = [lesson, "--device", "meta", "--steps", "1", "--quantization-every", "0",
            "--out-dir", OUT_DIR]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=240).stdout
    data = json.loads(subprocess.run(argv + ["--json"], check=True, capture_output=True,
                                     text=True, timeout=240).stdout)
    page_rows = [line.split() for line in page.splitlines() if line.strip()]
    checks = []
    for title in ("What each optimizer keeps", "At scale on meta"):
        for line in section(out, title):
            checks.append((title, line.split()))
    if len(checks) < 14 + 2 * 7:
        print(f"only {len(checks)} table rows found in the binary's output:\n{out}",
              file=sys.stderr)
        return 1
    missing = 0
    for name, expected in checks:
        found = any(row[:len(expected)] == expected for row in page_rows)
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  {name}: {' '.join(expected)}")
    for claim in data["claims"]:
        if claim["id"] not in BYTE_CLAIMS:
            continue
        found = claim["measured"] in page
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  claim #{claim['id']}: {claim['measured']}")
    if missing:
        print(f"lesson 09's page does not quote {missing} line(s) the binary prints now; re-run "
              "the default command and update its Real output and claims table", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
