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
print("ok")
