#!/usr/bin/python3
"""Block-wise 8-bit quantization side by side: vramlab's quantize_blockwise vs bitsandbytes'.

    venv-torch/bin/python bench/compare_bitsandbytes.py [--tool build/bin/quantize_blockwise_tool]

Lesson 09 (issue 19). For the signed and the unsigned dynamic map it compares
- the maps: bitsandbytes.functional.create_dynamic_map(signed) against ours
  (kernels/cpu/optimizer_8bit.h, written by the tool's --map);
- the codes and absmax of several tensors (normal, heavy-tailed, with zeros and an all-zero
  block, an odd length), quantised by bitsandbytes.functional.quantize_blockwise(A, code=map,
  blocksize=B) on the CPU and by our quantize_blockwise (through the tool, on the same f32 file);
and explains every difference: a value whose nearest code bitsandbytes' CPU lookup table
(0.50+: 65536 bins over [-1, 1], about 3.05e-5 wide, coarser than the codes near 0) gets
wrong, an all-zero block (bitsandbytes writes index 0, we write the index of the code 0.0; both
dequantise to 0), a tie, or x / absmax (ours) against x · (1 / absmax) (bitsandbytes) landing on
two sides of a decision point. Anything else is printed as unexplained.

bitsandbytes comes from `tools/setup.sh --with-peers` (pip install bitsandbytes in venv-torch/).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

import bitsandbytes.functional as bnb_functional

LUT_SIZE = 65536  # bitsandbytes csrc/cpu_ops.cpp, kLUTSize


def nearest_exact(code, y):
    """The index of the code nearest to each y by f32 distances, ties to the lower index (ours)."""
    d = np.abs(y[:, None].astype(np.float32) - code[None, :].astype(np.float32))
    return np.argmin(d, axis=1)  # argmin keeps the first of equal minima


def bitsandbytes_lut(code):
    """bitsandbytes' CPU table: bin i holds the first code whose right midpoint is >= its centre."""
    midpoints = (np.float32(0.5) * (code[:-1] + code[1:])).astype(np.float32)
    i = np.arange(LUT_SIZE, dtype=np.float32)
    centres = (np.float32(-1.0) + (np.float32(2.0) * i) / np.float32(LUT_SIZE - 1)).astype(np.float32)
    return np.searchsorted(midpoints, centres, side="left")


def lut_codes(lut, y):
    """The code bitsandbytes' table gives y (already x · (1 / absmax))."""
    y = np.clip(y, -1.0, 1.0).astype(np.float32)
    index = ((y + np.float32(1.0)) * np.float32(0.5) * np.float32(LUT_SIZE - 1) + np.float32(0.5))
    return lut[index.astype(np.uint16)]


def tensors(rng):
    """The inputs: name -> (f32 array, signed map?)."""
    normal = rng.standard_normal(1 << 16).astype(np.float32)
    heavy = rng.standard_t(2, 1 << 16).astype(np.float32)
    zeros = rng.standard_normal(5 * 4096 + 77).astype(np.float32)
    zeros[::3] = 0.0
    zeros[4096:8192] = 0.0  # an all-zero block
    odd = rng.standard_normal(100003).astype(np.float32) * 1e-3
    squares = (rng.standard_normal(1 << 16).astype(np.float32) * 1e-2) ** 2  # like v = g²
    return {"normal": (normal, True), "student-t(2)": (heavy, True), "zeros": (zeros, True),
            "odd n=100003": (odd, True), "normal² (unsigned)": (squares, False),
            "student-t(2) (unsigned map, |x|)": (np.abs(heavy), False)}


def run_tool(tool, args):
    subprocess.run([tool] + args, check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--tool", default=os.path.join(root, "build/bin/quantize_blockwise_tool"))
    parser.add_argument("--blocks", type=int, nargs="+", default=[64, 256, 4096])
    args = parser.parse_args()
    if not os.path.exists(args.tool):
        sys.exit(f"compare_bitsandbytes: error: no tool at '{args.tool}' (build the "
                 "quantize_blockwise_tool target)")
    import bitsandbytes
    print(f"bitsandbytes {bitsandbytes.__version__}, torch {torch.__version__}")
    unexplained = 0
    with tempfile.TemporaryDirectory() as tmp:
        maps = {}
        for signed in (True, False):
            name = "signed" if signed else "unsigned"
            path = os.path.join(tmp, f"map_{name}.f32")
            run_tool(args.tool, ["--map", name, path])
            ours = np.fromfile(path, dtype=np.float32)
            theirs = bnb_functional.create_dynamic_map(signed).numpy()
            differ = ours.view(np.uint32) != theirs.view(np.uint32)
            print(f"map {name}: {int(differ.sum())} of 256 codes differ, max |diff| "
                  f"{float(np.max(np.abs(ours - theirs))):.3g}")
            unexplained += int(differ.sum())
            maps[signed] = theirs
        rng = np.random.default_rng(19)
        for name, (x, signed) in tensors(rng).items():
            code = maps[signed]
            lut = bitsandbytes_lut(code)
            for block in args.blocks:
                x_path = os.path.join(tmp, "x.f32")
                q_path, a_path = os.path.join(tmp, "q.u8"), os.path.join(tmp, "a.f32")
                x.tofile(x_path)
                run_tool(args.tool, [x_path, str(block), "signed" if signed else "unsigned",
                                     q_path, a_path])
                q_ours = np.fromfile(q_path, dtype=np.uint8)
                a_ours = np.fromfile(a_path, dtype=np.float32)
                q_t, state = bnb_functional.quantize_blockwise(
                    torch.from_numpy(x), code=torch.from_numpy(code), blocksize=block)
                q_theirs = q_t.numpy().reshape(-1)
                a_theirs = state.absmax.numpy()
                absmax_differ = int((a_ours.view(np.uint32) != a_theirs.view(np.uint32)).sum())
                where = np.nonzero(q_ours != q_theirs)[0]
                blocks = where // block
                scale = a_ours[blocks]
                zero_block = scale == 0
                y_ours = (x[where] / np.where(zero_block, 1, scale)).astype(np.float32)
                y_theirs = (x[where] * (np.float32(1) / np.where(zero_block, 1, scale))).astype(np.float32)
                exact = nearest_exact(code, y_ours)
                ours_exact = exact == q_ours[where]
                d_lo = np.abs(y_ours - code[np.minimum(q_ours[where], q_theirs[where])])
                d_hi = np.abs(code[np.maximum(q_ours[where], q_theirs[where])] - y_ours)
                tie = ours_exact & (d_lo == d_hi)
                from_lut = ours_exact & ~tie & (lut_codes(lut, y_theirs) == q_theirs[where])
                reciprocal = ours_exact & ~tie & ~from_lut & \
                    (nearest_exact(code, y_theirs) == q_theirs[where])
                dequantised_zero = zero_block & (code[q_ours[where]] * 0 == 0)
                explained = dequantised_zero | tie | from_lut | reciprocal
                lut_gap = np.abs(code[q_theirs[where]] - code[q_ours[where]]) * scale
                print(f"{name:>34} block {block:>4}: n {x.size}, absmax differ {absmax_differ}, "
                      f"codes differ {where.size} ({100.0 * where.size / x.size:.2f}%): "
                      f"all-zero block {int(dequantised_zero.sum())}, "
                      f"bnb LUT bin {int((from_lut & ~dequantised_zero).sum())} "
                      f"(max |Δ dequantised| "
                      f"{float(lut_gap[from_lut & ~dequantised_zero].max(initial=0)):.3g}), "
                      f"tie {int((tie & ~dequantised_zero).sum())}, "
                      f"x/absmax vs x·(1/absmax) "
                      f"{int((reciprocal & ~from_lut & ~dequantised_zero).sum())}, "
                      f"unexplained {int((~explained).sum())}")
                unexplained += int((~explained).sum()) + absmax_differ
    print(f"unexplained differences: {unexplained}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
