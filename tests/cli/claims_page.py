#!/usr/bin/env python3
"""docs/pages/claims.md is `vramlab claims --markdown` over one-step runs (on the meta device where
the lesson's claims allow) of every lesson that keeps its claims as data
(lessons/NN-name/claims.json). --write regenerates the page; --check fails when the page has
drifted from what the binaries print now (times and the like, which differ between runs, aside),
and checks the claims table itself: every claim id of the catalogue once, every claim of a
lesson's claims.json measured by its run.

    claims_page.py --write|--check REPO BIN_DIR
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from pages import blas_env  # noqa: E402  (the pages' OpenBLAS kernel set, tools/pages.py)

# The runs whose JSON the page evaluates: fast, and the same bytes on every machine (lesson 03's
# claims read gradients and the accumulation table, which need a device that computes: sim).
RUNS = {
    "01": ["lesson01_memory_breakdown", "--device", "meta"],
    "02": ["lesson02_checkpointing", "--device", "meta", "--no-compression", "--steps", "1"],
    "03": ["lesson03_mixed_precision", "--steps", "1"],
    "04": ["lesson04_zero", "--device", "meta", "--simulated", "--steps", "1"],
    "05": ["lesson05_offload", "--steps", "2", "--links", "32"],
    "06": ["lesson06_flash_attention", "--device", "meta", "--no-training"],
    "07": ["lesson07_profiling", "--device", "meta", "--no-overhead"],
    "09": ["lesson09_optimizer_memory", "--device", "meta", "--steps", "1",
           "--quantization-every", "0"],
}
# Claims a meta run cannot measure (they need a training run's losses or gradients, or a kernel's
# time).
NOT_ON_META = {24, 25, 82, 113}
# What differs between runs: times, lesson 07's step-time ratios, and its count of distinct C++
# stacks (the compiler's inlining decides it).
VARIES = re.compile(r"\d+\.\d+ s\b|step [\d.]+x slower \(median of steps 2..\d+\); step 1 took "
                    r"[\d.]+x|\d+ distinct C\+\+ stacks")


def main():
    mode, repo, bin_dir = sys.argv[1:4]
    if mode not in ("--write", "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    out = tempfile.mkdtemp(prefix="vramlab-claims-page-")
    env = dict(os.environ, **blas_env())
    try:
        for lesson, argv in RUNS.items():
            subprocess.run([f"{bin_dir}/{argv[0]}", *argv[1:], "--out-dir", f"{out}/{lesson}"],
                           check=True, capture_output=True, timeout=300, env=env)
        claims = [f"{bin_dir}/vramlab", "claims", "--lesson-output", out]
        page = subprocess.run(claims + ["--markdown"], check=True, capture_output=True,
                              text=True, timeout=120, env=env).stdout
        table = json.loads(subprocess.run(claims + ["--json"], check=True, capture_output=True,
                                          text=True, timeout=120, env=env).stdout)
    finally:
        shutil.rmtree(out, ignore_errors=True)

    path = f"{repo}/docs/pages/claims.md"
    if mode == "--write":
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        print(f"wrote {path}")
        return 0

    problems = []
    ids = [c["id"] for c in table["claims"]]
    catalogue = json.load(open(f"{repo}/lessons/claims-catalogue.json", encoding="utf-8"))
    expected = [c["id"] for c in catalogue["claims"]]
    if sorted(ids) != sorted(expected) or len(set(ids)) != len(ids):
        problems.append(f"the table's ids are not the catalogue's, each once: {ids}")
    by_id = {c["id"]: c for c in table["claims"]}
    for lesson in RUNS:
        claims_file = glob.glob(f"{repo}/lessons/{lesson}-*/claims.json")[0]
        for claim in json.load(open(claims_file, encoding="utf-8"))["claims"]:
            row = by_id.get(claim["id"])
            want = "not_in_run" if claim["id"] in NOT_ON_META else "measured"
            if row is None or row["status"] != want:
                problems.append(f"claim {claim['id']} of lesson {lesson}: status "
                                f"{row and row['status']}, expected {want}")
            elif want == "measured" and not row["run_verdict"]:
                problems.append(f"claim {claim['id']}: measured without a verdict")
    current = open(path, encoding="utf-8").read()
    if VARIES.sub("~", current) != VARIES.sub("~", page):
        old, new = current.splitlines(), page.splitlines()
        for i, (a, b) in enumerate(zip(old, new)):
            if VARIES.sub("~", a) != VARIES.sub("~", b):
                problems.append(f"{path}:{i + 1} has drifted:\n  page: {a}\n  now:  {b}")
                break
        else:
            problems.append(f"{path} has {len(old)} lines, the binaries print {len(new)}")
        problems.append(f"regenerate it: python3 tests/cli/claims_page.py --write {repo} "
                        f"{bin_dir}")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(ids)} claims, {sum(c['status'] == 'measured' for c in table['claims'])} measured")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
