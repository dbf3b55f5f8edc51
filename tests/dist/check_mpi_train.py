#!/usr/bin/env python3
"""`vramlab train --zero S` under mpirun, for every stage: each rank holds the model-state bytes
`vramlab estimate --zero S --dp N` predicts, to the byte; each step sends the ZeRO paper's volumes
as the ring counts them (DDP and ZeRO-1/2: 2Ψ(N-1)/N elements per rank, ZeRO-3 3Ψ(N-1)/N, Ψ padded
to N per unit for ZeRO); and every stage's losses equal DDP's (bitwise for N = 2, where a sum of
two is commutative; within f32 rounding otherwise, as OpenMPI chooses the order).

usage: check_mpi_train.py VRAMLAB MPIEXEC N
"""
import json
import os
import subprocess
import sys

vramlab, mpiexec, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
MODEL = ["--layers", "2", "--hidden", "36", "--heads", "3", "--vocab", "97", "--seq", "12",
         "--batch", "2", "--steps", "3", "--device", "sim:1GiB", "--threads", "1"]
env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
failures = []


def run(stage):
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", str(n), vramlab, "train",
           *MODEL, "--zero", str(stage), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    steps = [l for l in lines if "step" in l and "summary" not in l]
    summary = [l for l in lines if l.get("summary")]
    if len(summary) != 1:
        sys.exit(f"zero {stage}: expected one summary from rank 0, got {len(summary)}:\n{p.stdout}")
    return steps, summary[0]


ddp_steps, ddp = run(0)
for stage in (0, 1, 2, 3):
    steps, summary = (ddp_steps, ddp) if stage == 0 else run(stage)
    par = summary["parallel"]
    est = par["estimate_model_state_bytes"]
    if par["world_size"] != n:
        failures.append(f"zero {stage}: world_size {par['world_size']} != {n}")
    for r in par["per_rank"]:
        for key in ("parameters", "gradients", "optimizer_states"):
            if r["model_state_bytes"][key] != est[key]:
                failures.append(f"zero {stage} rank {r['rank']}: {key} {r['model_state_bytes'][key]}"
                                f" != estimate {est[key]}")
    # Volumes: Σ over ranks of bytes sent = volume · Ψ' · 4 B · (N-1) (fp32).
    total = sum(r["bytes_sent"] for r in par["per_rank"])
    psi = summary["parameters"]
    if stage == 0:
        expected = 2 * psi * 4 * (n - 1)
        ok = total == expected
    else:
        volume = 3 if stage == 3 else 2
        # Ψ' ≥ Ψ by fewer than N elements per unit (L + 2 units).
        low, high = volume * psi * 4 * (n - 1), volume * (psi + n * 4) * 4 * (n - 1)
        ok = low <= total <= high and total % (volume * 4 * (n - 1)) == 0
        expected = f"{volume}Ψ'·4·(N-1) with Ψ' in [{psi}, {psi + 4 * n}]"
    if not ok:
        failures.append(f"zero {stage}: Σ bytes sent {total} != {expected}")
    for a, b in zip(steps, ddp_steps):
        if n == 2 and a["loss"] != b["loss"]:
            failures.append(f"zero {stage} step {a['step']}: loss {a['loss']!r} != DDP {b['loss']!r}"
                            " (two ranks: must be bitwise)")
        if abs(a["loss"] - b["loss"]) > 1e-5 * abs(b["loss"]):
            failures.append(f"zero {stage} step {a['step']}: loss {a['loss']} vs DDP {b['loss']}: "
                            f"|diff| {abs(a['loss'] - b['loss']):.3g} > 1e-5 relative")
    print(f"zero {stage}: per-rank states {est}, Σ sent {total} B, losses "
          f"{[s['loss'] for s in steps]}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"all stages agree on {n} MPI ranks")
