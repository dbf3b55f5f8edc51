#!/usr/bin/env python3
"""Lesson 02's page quotes byte counts and recompute shares from runs of the lesson binary (the
commands [a] to [c] under its claims table, and the "Real output" block). This re-runs them on the
meta device, where the saved-activation store holds exactly what it holds on a simulated GPU, and
fails when a number the page quotes is no longer what the binary prints.

    check_lesson02_page.py REPO LESSON02
"""
import atexit
import json
import shutil
import subprocess
import sys
import tempfile

# The lesson's files go to a directory of this run's own, so two builds can check at once.
OUT_DIR = tempfile.mkdtemp(prefix="vramlab-check-lesson02-page-")
atexit.register(shutil.rmtree, OUT_DIR, ignore_errors=True)

MIB, GIB = float(1 << 20), float(1 << 30)


def run_json(lesson, *args):
    argv = [lesson, *args, "--device", "meta", "--no-compression", "--max-batch-device", "none",
            "--steps", "1", "--json", "--out-dir", OUT_DIR]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


def main():
    repo, lesson = sys.argv[1:3]
    page = open(f"{repo}/lessons/02-checkpointing/README.md", encoding="utf-8").read()
    default = run_json(lesson)
    rows = {p["name"]: p for p in default["policies"]}
    none = rows["none"]["activation_peak_bytes"]
    expected = {}
    for name, p in rows.items():
        mib = f"{p['activation_peak_bytes'] / MIB:.2f} MiB"
        fraction = f"{100 * p['recomputed_forward_fraction']:.1f}%"
        expected[f"[a] {name} activation peak"] = mib
        expected[f"[a] {name} recomputed"] = fraction
        if name != "none":
            cut = f"-{100 * (1 - p['activation_peak_bytes'] / none):.0f}%"
            expected[f"[a] {name} vs none"] = cut
        # The table row of "Real output", as printed.
        expected[f"[a] {name} row"] = f"{name:<12}  {p['pattern']}  {mib:>15}     same"
    expected["[a] least peak"] = f"{default['least_activation_peak_bytes'] / MIB:.2f} MiB"
    expected["[a] budget"] = rows[[n for n in rows if n.startswith("budget:")][0]]["name"]
    for p in default["meta"]["rows"]:
        expected[f"[c] {p['name']} llama"] = f"{p['activation_peak_bytes'] / GIB:.2f} GiB"
        expected[f"[c] {p['name']} training FLOPs"] = f"+{100 * p['recomputed_forward_fraction'] / 3:.1f}%"
    for layers in (16, 64, 256):
        deep = {p["name"]: p for p in run_json(lesson, "--layers", str(layers), "--no-scale")["policies"]}
        for name in ("none", "sqrt", "full"):
            expected[f"[b] L={layers} {name}"] = f"{deep[name]['activation_peak_bytes'] / MIB:.2f}"
    missing = {what: value for what, value in expected.items() if value not in page}
    for what, value in expected.items():
        print(f"{'ok ' if what not in missing else 'MISSING'}  {what}: {value}")
    if missing:
        print(f"lesson 02's page does not quote {len(missing)} number(s) the binary prints now; "
              "rerun the commands under its claims table and update it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
