#!/usr/bin/env python3
"""The training step of every data-parallel strategy on 4 MPI ranks, measured in one run: the
median step time of DDP and ZeRO-1/2/3 (and ZeRO-3 with prefetch) on the same model and batch,
and each one's ratio to DDP's. The issue's goal: ZeRO-3's step at most 1.5x DDP's on 4 CPU ranks.

usage: bench/compare_zero_steps.py [--vramlab build/bin/vramlab] [--ranks 4] [--steps 12]
       [--model gpt2-tiny] [--batch 4] [--seq 64]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--vramlab", default="build/bin/vramlab")
parser.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
parser.add_argument("--ranks", type=int, default=4)
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--model", default="gpt2-tiny")
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--seq", type=int, default=64)
args = parser.parse_args()
if args.ranks < 1 or args.steps < 3:
    sys.exit("--ranks must be >= 1 and --steps >= 3")

env = dict(os.environ, OMP_WAIT_POLICY="passive", OMPI_MCA_rmaps_base_oversubscribe="1")
rows = []
for name, flags in [("ddp", ["--zero", "0"]), ("zero1", ["--zero", "1"]),
                    ("zero2", ["--zero", "2"]), ("zero3", ["--zero", "3"]),
                    ("zero3+prefetch", ["--zero", "3", "--prefetch"])]:
    cmd = [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(args.ranks),
           args.vramlab, "train", "--model", args.model, "--batch", str(args.batch), "--seq",
           str(args.seq), "--steps", str(args.steps), "--device", "sim", "--threads", "1",
           *flags, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    summary = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{") and '"summary"' in l][0]
    sent = max(r["bytes_sent"] for r in summary["parallel"]["per_rank"])
    rows.append((name, summary["median_step_s"], sent, summary["peak_bytes"]["total"]))
ddp = rows[0][1]
print(f"{args.model}, B={args.batch} T={args.seq} per rank, {args.ranks} MPI ranks, "
      f"1 thread each, {args.steps} steps (median)")
print(f"{'strategy':16} {'step':>10} {'vs DDP':>8} {'sent/step/rank':>16} {'peak rank 0':>12}")
for name, s, sent, peak in rows:
    print(f"{name:16} {s * 1e3:8.1f} ms {s / ddp:7.2f}x {sent / 2**20:12.2f} MiB {peak / 2**20:9.1f} MiB")
z3 = rows[3][1] / ddp
print(f"ZeRO-3 / DDP = {z3:.2f}x (goal: at most 1.5x)")
