#!/usr/bin/env python3
"""Lesson 07's page quotes the lesson binary's tables. The bytes do not depend on the machine:
this re-runs the lesson on the meta device (which allocates exactly the tensors a simulated GPU
allocates, in the same order) and fails when the page no longer shows them: the peak, every row of
the per-module table, the largest allocations at the peak (tensor, bytes, module, phase,
category), the checkpointing comparison's byte rows, the leak's rows, the at-scale line, and the
measured value of each claim that rests on bytes alone. Times, losses and the stack count are
left out: they depend on the machine or on the kernels that ran.

    check_lesson07_page.py REPO LESSON07
"""
import atexit
import json
import shutil
import subprocess
import sys
import tempfile

# The lesson's files go to a directory of this run's own, so two builds can check at once.
OUT_DIR = tempfile.mkdtemp(prefix="vramlab-check-lesson07-page-")
atexit.register(shutil.rmtree, OUT_DIR, ignore_errors=True)

BYTE_CLAIMS = {90, 91, 92, 93, 95, 96, 97}


def table_rows(text, title):
    """The rows of the first table after the line containing title: past its rule, up to a blank
    line or a line that is not indented as a table row."""
    rows, taking, past_rule = [], False, False
    for line in text.splitlines():
        if not taking:
            taking = title in line
            continue
        if not past_rule:
            past_rule = line.strip().startswith("---")
            continue
        if not line.strip() or not line.startswith("  ") or line.startswith("   "):
            break
        rows.append(line)
    return rows


def main():
    repo, lesson = sys.argv[1:3]
    page = open(f"{repo}/lessons/07-profiling/README.md", encoding="utf-8").read()
    argv = [lesson, "--device", "meta", "--no-overhead", "--out-dir",
            OUT_DIR]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=240).stdout
    data = json.loads(subprocess.run(argv + ["--json"], check=True, capture_output=True,
                                     text=True, timeout=240).stdout)
    page_rows = [line.split() for line in page.splitlines() if line.strip()]
    checks = []
    for title, tokens in (("Memory per module at the peak", None),
                          ("The largest allocations live at the peak", 6),
                          ("The planted leak", None)):
        rows = table_rows(out, title)
        if not rows:
            print(f"no rows under '{title}' in the binary's output:\n{out}", file=sys.stderr)
            return 1
        for row in rows:
            checks.append((title, row.split()[:tokens] if tokens else row.split()))
    for row in table_rows(out, "With checkpointing"):
        if row.split()[0] in ("peak", "allocated", "…"):
            checks.append(("With checkpointing", row.split()))
    missing = 0
    for name, expected in checks:
        found = any(row[:len(expected)] == expected for row in page_rows)
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  {name}: {' '.join(expected)}")
    for text in (f"{data['peak_bytes']:,} B", f"requested-bytes peak: {data['allocator_peak_bytes']:,} B"):
        found = text in page
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  {text}")
    for claim in data["claims"]:
        if claim["id"] not in BYTE_CLAIMS:
            continue
        found = claim["measured"] in page
        missing += not found
        print(f"{'ok     ' if found else 'MISSING'}  claim #{claim['id']}: {claim['measured']}")
    if missing:
        print(f"lesson 07's page does not quote {missing} line(s) the binary prints now; re-run "
              "the default command and update its Real output and claims table", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
