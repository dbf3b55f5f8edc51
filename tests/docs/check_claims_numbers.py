#!/usr/bin/env python3
"""Lesson 01's claims table quotes numbers from runs of vramlab's binaries (the commands [a] to [j]
listed under the table). This re-runs each command and fails when a number the page quotes is no
longer what the binary prints, so the table cannot drift from the runtime.

    check_claims_numbers.py REPO VRAMLAB LESSON01
"""
import json
import subprocess
import sys

GB, GIB, MIB = 1e9, float(1 << 30), float(1 << 20)


def run_json(argv):
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out.strip().splitlines()[-1] if argv[1] == "train" else out)


def main():
    repo, vramlab, lesson = sys.argv[1:4]
    page = open(f"{repo}/lessons/01-memory-breakdown/README.md", encoding="utf-8").read()
    start = page.index("## What popular tutorials claim, measured")
    table = page[start:page.index("\n## ", start + 1)]

    def estimate(*args):
        return run_json([vramlab, "estimate", *args, "--json"])["per_device_bytes"]

    def measured(*args):
        return run_json([lesson, *args, "--json"])

    gpt13 = ["--model", "", "--layers", "24", "--hidden", "2048", "--heads", "16", "--vocab",
             "50257", "--seq", "2048", "--device", "meta"]
    llama = ["--model", "llama2-7b", "--device", "meta"]
    c = measured(*llama, "--batch", "1", "--seq", "1024")
    a = measured()
    train = run_json([vramlab, "train", "--model", "llama2-7b", "--batch", "1", "--seq", "1024",
                      "--device", "meta", "--steps", "2", "--json"])
    expected = {
        "[a] optimizer states": f"{a['measured_bytes']['optimizer_states'] / MIB:.2f} MiB",
        "[a] activations": f"{a['measured_bytes']['activations'] / MIB:.2f} MiB",
        "[b] fp32 7B total": f"{estimate('--params', '7e9', '--precision', 'fp32')['total'] / GB:.0f} GB",
        "[b] fp32 7B weights": f"{estimate('--params', '7e9', '--precision', 'fp32')['parameters'] / GB:.1f} GB",
        "[c] llama2-7b peak": f"{c['peak_bytes'] / GB:.2f} GB",
        "[c] llama2-7b parameters": f"{c['measured_bytes']['parameters'] / GIB:.2f} GiB",
        "[c] llama2-7b activations": f"{c['measured_bytes']['activations'] / GIB:.2f} GiB",
        "[d] two steps' peak": f"{train['peak_bytes']['total'] / GB:.2f} GB",
        "[e] pure bf16": f"{estimate('--params', '7e9', '--precision', 'bf16')['total'] / GB:.1f} GB",
        "[g] 1B fp32": f"{estimate('--params', '1e9', '--precision', 'fp32')['total'] / GB:.1f} GB",
        "[h] 1.3B B=1": f"{measured(*gpt13, '--batch', '1')['measured_bytes']['activations'] / GB:.2f} GB",
        "[h] 1.3B B=8": f"{measured(*gpt13, '--batch', '8')['measured_bytes']['activations'] / GB:.2f} GB",
        "[j] B=4 T=1024": f"{measured(*llama, '--batch', '4', '--seq', '1024')['measured_bytes']['activations'] / GIB:.2f} GiB",
        "[j] B=1 T=4096": f"{measured(*llama, '--batch', '1', '--seq', '4096')['measured_bytes']['activations'] / GIB:.2f} GiB",
    }
    missing = {what: value for what, value in expected.items() if value not in table}
    for what, value in expected.items():
        print(f"{'ok ' if what not in missing else 'MISSING'}  {what}: {value}")
    if missing:
        print(f"lesson 01's claims table does not quote {len(missing)} number(s) the binaries print "
              "now; rerun the commands under the table and update it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
