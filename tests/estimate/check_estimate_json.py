"""Checks `vramlab estimate --json` against the papers' numbers, computed here independently.

Usage: python3 check_estimate_json.py <path to vramlab>
"""
import json
import subprocess
import sys

VRAMLAB = sys.argv[1]


def run(*args):
    out = subprocess.run([VRAMLAB, "estimate", *args, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


# ZeRO Figure 1: 7.5B parameters, Nd = 64, mixed-precision Adam.
for stage, expected in enumerate([120e9, 31.40625e9, 16.640625e9, 1.875e9]):
    d = run("--params", "7.5e9", "--precision", "mixed-fp16", "--zero", str(stage), "--dp", "64")
    total = d["per_device_bytes"]["total"]
    assert abs(total - expected) <= 1e-9 * expected, (stage, total, expected)
    assert d["inputs"]["zero_stage"] == stage and d["inputs"]["dp"] == 64, d["inputs"]
    assert d["inputs"]["params"] == 7_500_000_000 and d["inputs"]["model"] is None, d["inputs"]
    assert "Rajbhandari" in d["sources"]["optimizer_states"], d["sources"]
    assert d["activations_runtime_layout_bytes"] is None
    parts = d["per_device_bytes"]
    assert parts["parameters"] + parts["gradients"] + parts["optimizer_states"] + parts["activations"] == total

# GPT-2 124M, b = 2, s = 1024, mixed bf16: activations = L · sbh(34 + 5as/h) (Korthikanti Table 2).
d = run("--model", "gpt2-124m", "--batch", "2")
s, b, h, a, L = 1024, 2, 768, 12, 12
expected = L * s * b * h * (34 + 5 * a * s / h)
assert d["per_device_bytes"]["activations"] == expected, (d["per_device_bytes"], expected)
assert d["parameter_count"] == 124_439_808
assert d["per_device_bytes"]["parameters"] == 2 * 124_439_808
assert d["bytes_per_parameter"]["model_states"] == 16
assert d["inputs"]["seq"] == 1024 and d["inputs"]["micro_batch"] == 2
assert "Korthikanti" in d["sources"]["activations"]
# The runtime layout, bf16: 16C·BT + 4BT + H·BT² per layer (probabilities kept, scores not);
# outside 2C·BT + 3BT + V·BT (the logits are a temporary of the loss). The norm statistics (4BT
# per layer, 2BT outside) and the losses (BT) stay fp32 in every precision.
V, BT = 50257, b * s
runtime = (2 * (L * (16 * h * BT + a * b * s * s) + 2 * h * BT + V * BT)
           + 4 * (L * 4 * BT + 3 * BT))
assert d["activations_runtime_layout_bytes"] == runtime, (d["activations_runtime_layout_bytes"], runtime)
assert d["offload_efficiency"] is None

# ZeRO-Infinity's efficiency (Rajbhandari et al. 2021, section 4) over a 32 GB/s link at the bf16
# peak, Llama-2-13B at b = 4, s = 2048: ait = s·b, s·b/4 and 24·hd; efficiency = ait·bw/(ait·bw + peak).
d = run("--model", "llama2-13b", "--precision", "mixed-bf16", "--batch", "4", "--seq", "2048",
        "--link-gbps", "32", "--peak-tflops", "fp32=19.5,bf16=312")
e = d["offload_efficiency"]
assert e["link_bytes_per_s"] == 32e9 and e["peak_flops"] == 312e12 and e["peak_dtype"] == "bf16", e
rows = {r["quantity"]: r for r in e["rows"]}
for quantity, ait in [("parameters + gradients", 2048 * 4), ("optimizer states", 2048 * 4 / 4),
                      ("activation checkpoints", 24 * 5120)]:
    r = rows[quantity]
    assert r["arithmetic_intensity"] == ait, (quantity, r)
    eff = ait * 32e9 / (ait * 32e9 + 312e12)
    assert abs(r["efficiency"] - eff) <= 1e-12, (quantity, r, eff)
    for fraction, key in [(0.5, "bytes_per_s_for_50_percent"), (0.9, "bytes_per_s_for_90_percent")]:
        need = fraction * 312e12 / (ait * (1 - fraction))
        assert abs(r[key] - need) <= 1e-9 * need, (quantity, key, r[key], need)
# fp32 takes the CUDA-core peak.
d = run("--model", "gpt2-124m", "--precision", "fp32", "--link-gbps", "16",
        "--peak-tflops", "fp32=19.5,bf16=312")
assert d["offload_efficiency"]["peak_flops"] == 19.5e12, d["offload_efficiency"]

# --deepspeed: DeepSpeed's estimators (stage_1_and_2.py after PR #5099, stage3.py; factor 1.5,
# zero_init) for gpt2-1.5b on 8 GPUs, and this estimator's ZeRO formulas for the same rows.
d = run("--model", "gpt2-1.5b", "--precision", "mixed-bf16", "--dp", "8", "--deepspeed")
ds = d["deepspeed"]
P, N, L = d["parameter_count"], 8, 50257 * 1600  # the largest module: the embedding
assert ds["parameters"] == P and ds["gpus_per_node"] == N and ds["largest_layer_params"] == L, ds
rows = {(r["stage"], r["offload"]): r for r in ds["rows"]}
expected = {
    (2, "none"): (2 * P + int(18 * P / N), int(P * 4 * N * 1.5)),
    (2, "optimizer"): (2 * P, int(P * max(4 * N, 16) * 1.5)),
    (3, "none"): (4 * L + int(18 * P / N), int(L * 4 * N * 1.5)),
    (3, "optimizer"): (4 * L + int(2 * P / N), int(P * 16 * 1.5)),
    (3, "both"): (4 * L, int(P * 18 * 1.5)),
}
assert set(rows) == set(expected), rows.keys()
for key, (gpu, cpu) in expected.items():
    assert rows[key]["deepspeed_gpu_bytes"] == gpu, (key, rows[key], gpu)
    assert rows[key]["deepspeed_cpu_bytes"] == cpu, (key, rows[key], cpu)
# Ours (P divides by N here): 2 bytes of parameters, 2 of gradients, K = 12 of Adam states; an
# offloaded optimizer's host also stages the rank's 16-bit gradients and parameters (2 + 2) or,
# with the parameters offloaded, holds them; under ZeRO-2 and 3 the device keeps no gradient shard
# (each goes to the host as it is reduced), and with the parameters offloaded no parameter either.
assert P % N == 0
ours = {(2, "none"): (2 * P + 14 * P // N, 0), (2, "optimizer"): (2 * P, 16 * P),
        (3, "none"): (16 * P // N, 0), (3, "optimizer"): (2 * P // N, 16 * P),
        (3, "both"): (0, 16 * P)}
for key, (device, host) in ours.items():
    assert rows[key]["our_device_model_state_bytes"] == device, (key, rows[key], device)
    assert rows[key]["our_host_bytes"] == host, (key, rows[key], host)
assert run("--model", "gpt2-124m")["deepspeed"] is None
print("ok")
