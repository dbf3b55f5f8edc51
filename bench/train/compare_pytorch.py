#!/usr/bin/python3
"""Side-by-side training step: vramlab vs PyTorch on the CPU, same model, same threads.

    /usr/bin/python3 bench/train/compare_pytorch.py --vramlab build/bin/vramlab [--rounds 5 --steps 6]
    /usr/bin/python3 bench/train/compare_pytorch.py --precision mixed-bf16   # lesson 03
    /usr/bin/python3 bench/train/compare_pytorch.py --precision bf16
    /usr/bin/python3 bench/train/compare_pytorch.py --baseline /old/build/bin/vramlab   # a refactor

--precision fp32 (default) compares both sides in fp32. --precision mixed-bf16 runs three sides
per round: vramlab in fp32, vramlab in mixed-bf16 (bf16 weights and activations, fp32 master and
AdamW states), and PyTorch's CPU autocast in bf16 (torch.autocast("cpu", dtype=torch.bfloat16)
around the forward, fp32 parameters); --precision bf16 compares vramlab's pure bf16 with PyTorch's
model.to(torch.bfloat16). It prints our 16-bit step over our fp32 step and over PyTorch's.

--baseline PATH adds a third side to every fp32 round: another vramlab binary (the same code
before a change), so "the step is no slower" is one ratio measured under the same load.

The model is gpt2-tiny (4 layers, width 256, 4 heads, T=128, B=8, vocab 4096, tied embeddings,
learned positions, LayerNorm, tanh-GELU MLP, materialized causal attention), trained with AdamW in
fp32 on 2 threads. Runs alternate (vramlab, PyTorch, vramlab, ...) so both see the same machine
load; the first step of every run is a warm-up and is dropped. It prints the median step time of
each, their ratio, and the model FLOP utilisation of each against the SGEMM rate that
`vramlab doctor --json` measures (blas.sgemm_gflops) on the same OpenBLAS.

PyTorch here is Debian's python3-torch (1.13), installed for /usr/bin/python3 only. Both sides
inherit this process's environment, so OPENBLAS_CORETYPE is the same for both (it is printed).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

LAYERS, HIDDEN, HEADS, SEQ, BATCH, VOCAB, THREADS = 4, 256, 4, 128, 8, 4096, 2


def model_flops_per_step():
    """Dense FLOPs of one training step (forward + backward = 3x forward), counting GEMMs only:
    6 x (matmul parameters) x tokens + attention's QK^T and AV (12 L B T^2 C, causal mask ignored)."""
    c, v = HIDDEN, VOCAB
    per_layer = 3 * c * c + c * c + 4 * c * c + 4 * c * c  # qkv, proj, fc, mlp proj weights
    matmul_params = LAYERS * per_layer + v * c  # + the tied LM head
    tokens = BATCH * SEQ
    return 6 * matmul_params * tokens + 12 * LAYERS * BATCH * SEQ * SEQ * c


def run_vramlab(binary, steps, seed, precision="fp32"):
    cmd = [binary, "train", "--model", "gpt2-tiny", "--batch", str(BATCH), "--seq", str(SEQ),
           "--steps", str(steps), "--threads", str(THREADS), "--seed", str(seed),
           "--precision", precision, "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [r["step_s"] for r in rows if "step_s" in r][1:]


def build_torch_model(torch):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
            self.qkv, self.proj = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
            self.fc, self.fc_proj = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)
            self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

        def forward(self, x):
            b, t, c = x.shape
            d = c // HEADS
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, HEADS, d).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / d ** 0.5)
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            x = x + self.proj(y)
            return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(SEQ, HIDDEN)
            self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
            self.lnf = nn.LayerNorm(HIDDEN)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            logits = self.lnf(x) @ self.wte.weight.t()  # tied LM head
            return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))

    return GPT()


def run_torch(torch, steps, seed, precision="fp32"):
    torch.manual_seed(seed)
    model = build_torch_model(torch)
    if precision == "bf16":
        model = model.to(torch.bfloat16)  # gradients and AdamW's states follow: 8 B/param
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    autocast = precision == "mixed-bf16"
    times = []
    for _ in range(steps):
        idx = torch.randint(0, VOCAB, (BATCH, SEQ))
        targets = torch.randint(0, VOCAB, (BATCH, SEQ))
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(idx, targets)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return times[1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vramlab", default="build/bin/vramlab", help="path of the vramlab binary")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--steps", type=int, default=6, help="steps per run (first is warm-up)")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "mixed-bf16", "bf16"],
                        help="fp32 (default); mixed-bf16 vs PyTorch's CPU autocast; bf16 vs "
                             "model.to(torch.bfloat16)")
    parser.add_argument("--baseline", help="another vramlab binary run in every fp32 round")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("PyTorch not found: run this script with /usr/bin/python3 (Debian's python3-torch)")
    torch.set_num_threads(THREADS)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other work skews both sides)")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}  "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads; vramlab {THREADS} threads")
    doctor = json.loads(subprocess.run([args.vramlab, "doctor", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    sgemm_gflops = doctor["blas"]["sgemm_gflops"]
    print(f"BLAS: {doctor['blas']['core']} core, measured SGEMM {sgemm_gflops:.1f} GFLOP/s")

    if args.precision != "fp32":
        compare_low_precision(torch, args)
        return
    vramlab_times, torch_times, baseline_times = [], [], []
    for r in range(args.rounds):
        v = run_vramlab(args.vramlab, args.steps, r + 1)
        t = run_torch(torch, args.steps, r + 1)
        b = run_vramlab(args.baseline, args.steps, r + 1) if args.baseline else []
        vramlab_times += v
        torch_times += t
        baseline_times += b
        print(f"round {r + 1}: vramlab median {statistics.median(v):.3f} s, "
              f"pytorch median {statistics.median(t):.3f} s" +
              (f", baseline median {statistics.median(b):.3f} s" if b else ""))
    flops = model_flops_per_step()
    floor_s = flops / (sgemm_gflops * 1e9)
    v_med, t_med = statistics.median(vramlab_times), statistics.median(torch_times)
    print(f"model FLOPs per step {flops / 1e9:.2f} GFLOP; floor at the SGEMM rate {floor_s:.3f} s")
    print(f"vramlab median step {v_med:.3f} s  MFU {floor_s / v_med:.1%}  ({v_med / floor_s:.2f}x the floor)")
    print(f"pytorch median step {t_med:.3f} s  MFU {floor_s / t_med:.1%}  ({t_med / floor_s:.2f}x the floor)")
    print(f"ratio vramlab / pytorch = {v_med / t_med:.3f}  (target <= 0.5)")
    if baseline_times:
        b_med = statistics.median(baseline_times)
        print(f"ratio vramlab / baseline {args.baseline} = {v_med / b_med:.3f}  "
              f"(a change that leaves the step alone: about 1)")
    print(json.dumps({"vramlab_median_step_s": v_med, "pytorch_median_step_s": t_med,
                      "ratio": v_med / t_med, "flops_per_step": flops, "sgemm_gflops": sgemm_gflops,
                      "vramlab_vs_floor": v_med / floor_s, "pytorch_vs_floor": t_med / floor_s}))


def compare_low_precision(torch, args):
    """Our 16-bit step against our fp32 step and PyTorch's 16-bit step, alternating runs."""
    ours32, ours16, theirs16 = [], [], []
    for r in range(args.rounds):
        a = run_vramlab(args.vramlab, args.steps, r + 1, "fp32")
        b = run_vramlab(args.vramlab, args.steps, r + 1, args.precision)
        c = run_torch(torch, args.steps, r + 1, args.precision)
        ours32, ours16, theirs16 = ours32 + a, ours16 + b, theirs16 + c
        print(f"round {r + 1}: vramlab fp32 {statistics.median(a):.3f} s, vramlab {args.precision} "
              f"{statistics.median(b):.3f} s, pytorch {args.precision} {statistics.median(c):.3f} s")
    m32, m16, t16 = (statistics.median(x) for x in (ours32, ours16, theirs16))
    what = "CPU autocast bf16" if args.precision == "mixed-bf16" else "model.to(bfloat16)"
    print(f"vramlab {args.precision} / vramlab fp32 = {m16 / m32:.3f}  (goal < 1)")
    print(f"vramlab {args.precision} / pytorch {what} = {m16 / t16:.3f}  (goal <= 1)")
    print(json.dumps({"precision": args.precision, "vramlab_fp32_median_step_s": m32,
                      "vramlab_low_precision_median_step_s": m16,
                      "pytorch_low_precision_median_step_s": t16,
                      "ratio_vs_own_fp32": m16 / m32, "ratio_vs_pytorch": m16 / t16}))


if __name__ == "__main__":
    main()
