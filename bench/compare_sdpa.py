#!/usr/bin/python3
"""Side-by-side causal attention forward + backward: vramlab's CPU flash attention vs PyTorch's.

    venv-torch/bin/python bench/compare_sdpa.py [--bench build/bench/bin/bench_kernels_cpu]
        [--seq 1024 2048 4096] [--rounds 3] [--threads 2]

Lesson 06 (issue 17's speed goals). One step is the forward and the backward of causal attention
at B=1, H=8, head size 64, fp32, no dropout:
- ours: cpu::flash_attention_forward + flash_attention_backward, and the naive attention
  (materialised scores) for flash/naive, timed by the Google Benchmark bench_kernels_cpu
  (BM_CausalAttentionForwardBackward, --benchmark_format=json);
- PyTorch: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) then
  out.backward(dout), which on the CPU dispatches to its fused flash-attention kernel.
Runs alternate (ours, PyTorch, ours, ...) on the same thread count so both see the same machine
load; each side reports its median. It prints ours/PyTorch (goal <= 1.5 at T=2048) and
flash/naive (goal < 1 for T >= 1024), all measured in this one run.

PyTorch 2.x is needed (scaled_dot_product_attention); Debian's python3-torch is 1.13, so
`tools/setup.sh --with-peers` makes the venv venv-torch/ with PyPI's torch (any torch >= 2.0 runs
here on the CPU).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HEADS, HEAD_DIM = 8, 64


def run_ours(binary, seq, which, threads, min_time):
    """Median seconds per forward+backward of our `which` (flash or naive) attention at seq."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [binary, f"--benchmark_filter=BM_CausalAttentionForwardBackward/{which}/{seq}/0/0/",
           "--benchmark_format=json", f"--benchmark_min_time={min_time}",
           "--benchmark_repetitions=3"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:
        sys.exit(f"compare_sdpa: {binary} ran no benchmark for {which} at T={seq}")
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    return statistics.median(b["real_time"] * scale[b["time_unit"]] for b in runs)


def run_torch(torch, seq, iterations):
    """Median seconds per forward+backward of PyTorch's causal SDPA at seq (first call dropped)."""
    F = torch.nn.functional
    gen = torch.Generator().manual_seed(seq)
    q, k, v = (torch.rand(1, HEADS, seq, HEAD_DIM, generator=gen).mul_(2).sub_(1).requires_grad_()
               for _ in range(3))
    dout = torch.rand(1, HEADS, seq, HEAD_DIM, generator=gen)
    times = []
    for _ in range(iterations + 1):
        q.grad = k.grad = v.grad = None
        start = time.perf_counter()
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(dout)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bench/bin/bench_kernels_cpu",
                        help="path of the bench_kernels_cpu binary")
    parser.add_argument("--seq", type=int, nargs="+", default=[1024, 2048, 4096],
                        help="sequence lengths T")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--threads", type=int, default=2, help="threads of both sides")
    parser.add_argument("--no-naive", action="store_true", help="skip our naive attention")
    args = parser.parse_args()
    for name, value in (("--rounds", args.rounds), ("--threads", args.threads)):
        if value < 1:
            print(f"compare_sdpa: error: {name} must be >= 1, got {value}", file=sys.stderr)
            sys.exit(2)
    for seq in args.seq:
        if seq < 1:
            print(f"compare_sdpa: error: --seq must be >= 1, got {seq}", file=sys.stderr)
            sys.exit(2)
    if not os.access(args.bench, os.X_OK):
        print(f"compare_sdpa: error: --bench {args.bench} is not an executable (build the target "
              "bench_kernels_cpu)", file=sys.stderr)
        sys.exit(2)
    try:
        import torch
    except ImportError:
        sys.exit("compare_sdpa: PyTorch not found: run with a python that has torch >= 2.0 "
                 "(see the docstring)")
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        sys.exit(f"compare_sdpa: torch {torch.__version__} has no scaled_dot_product_attention")
    torch.set_num_threads(args.threads)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          f"(other work skews both sides); {args.threads} threads; torch {torch.__version__}")
    print(f"causal attention forward+backward, B=1, H={HEADS}, d={HEAD_DIM}, fp32")
    rows = []
    for seq in args.seq:
        flash, naive, theirs = [], [], []
        for _ in range(args.rounds):
            flash.append(run_ours(args.bench, seq, "flash", args.threads, 0.3))
            theirs.append(run_torch(torch, seq, 3))
            if not args.no_naive:
                naive.append(run_ours(args.bench, seq, "naive", args.threads, 0.3))
        row = {"seq": seq, "flash_s": statistics.median(flash),
               "pytorch_sdpa_s": statistics.median(theirs)}
        row["flash_over_pytorch"] = row["flash_s"] / row["pytorch_sdpa_s"]
        text = (f"T={seq:5d}: flash {row['flash_s'] * 1e3:8.1f} ms  PyTorch SDPA "
                f"{row['pytorch_sdpa_s'] * 1e3:8.1f} ms  ours/PyTorch {row['flash_over_pytorch']:.2f}")
        if naive:
            row["naive_s"] = statistics.median(naive)
            row["flash_over_naive"] = row["flash_s"] / row["naive_s"]
            text += (f"  naive {row['naive_s'] * 1e3:8.1f} ms  flash/naive "
                     f"{row['flash_over_naive']:.2f}")
        print(text, flush=True)
        rows.append(row)
    print("goals: ours/PyTorch <= 1.5 at T=2048; flash/naive < 1 for T >= 1024")
    print(json.dumps({"threads": args.threads, "rows": rows}))


if __name__ == "__main__":
    main()
