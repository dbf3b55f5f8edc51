#!/usr/bin/env python3
"""Lesson 04's page quotes the lesson binary's tables. The bytes do not depend on the machine nor
on how the ranks run: every rank has its own allocator under mpirun and as a simulated thread.
This re-runs the lesson with simulated ranks (2 steps: the bytes of a step do not change after the
first) and fails when the page no longer shows a row of the tables made of bytes (per rank, bytes
sent, at scale, the seeds' 7B, 70B) or the measured value of a claim. Losses and times are left
out: under mpirun the order of OpenMPI's sums changes the last bits of the losses.

    check_lesson04_page.py REPO LESSON04
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

# The lesson's files go to a directory of this run's own, so two builds can check at once.
OUT_DIR = tempfile.mkdtemp(prefix="vramlab-check-lesson04-page-")
atexit.register(shutil.rmtree, OUT_DIR, ignore_errors=True)

TABLES = ("Per rank after the last step", "Bytes sent per rank in one step",
          "At scale on meta", "The seeds' 7B on 8 GPUs", "Llama 2 70B on")


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
    page = open(f"{repo}/lessons/04-zero/README.md", encoding="utf-8").read()
    argv = [lesson, "--simulated", "--steps", "2", "--out-dir", OUT_DIR]
    env = dict(os.environ, NO_COLOR="1")
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=240,
                         env=env).stdout
    data = json.loads(subprocess.run(argv + ["--json"], check=True, capture_output=True,
                                     text=True, timeout=240, env=env).stdout)
    page_rows = [line.split() for line in page.splitlines() if line.strip()]
    checks = []
    for title in TABLES:
        for line in section(out, title):
            checks.append((title, line.split()))
    if len(checks) < 4 + 4 + 4 + 4 + 1:
        print(f"only {len(checks)} table rows found in the binary's output:\n{out}",
              file=sys.stderr)
        return 1
    missing = 0
    for name, expected in checks:
        found = any(row[:len(expected)] == expected for row in page_rows)
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  {name}: {' '.join(expected)}")
    for claim in data["claims"]:
        found = claim["measured"] in page
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  claim #{claim['id']}: {claim['measured']}")
    if missing:
        print(f"lesson 04's page does not quote {missing} line(s) the binary prints now; re-run "
              "the default command and update its Real output and claims table", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
