#!/usr/bin/env python3
"""PyTorch 2.x's own _memory_viz reads a real training step's snapshot with its C++ frames.

Runs RECORD_BINARY OUT_DIR/step.pickle (a GPT-2 step on sim recorded with C++ call stacks, the
snapshot taken as backward starts), then with this interpreter's torch:
- `python -m torch.cuda._memory_viz trace` and `stats` must run and print the allocations;
- `_memory_viz.memory()` and `segments()` (the collapsed stacks the `memory`/`segments`
  subcommands hand to flamegraph.pl, which they download, so the functions are called with an
  identity formatter) must show the frames: vramlab's label frame (module path and tensor) and a
  vramlab C++ function, Attention::forward for the attention probabilities;
- `trace_plot` must write its HTML page (the memory_viz viewer, which shows frames on hover).
In torch 2.x `trace` prints allocations without frames, so the frames are checked where
_memory_viz prints them.
With --profile, VRAMLAB is the vramlab binary: `vramlab train --profile` records a small run and
its snapshot.pickle (taken at the end of the run) is checked the same way, except that the stack
looked for is any block's live at the end (parameters, gradients, optimizer states), with its
label frame and a vramlab C++ function.
Exits 77 (ctest SKIP_RETURN_CODE) with a reason when torch is absent or older than 2.0.
Usage: check_memory_viz_frames.py RECORD_BINARY OUT_DIR
       check_memory_viz_frames.py --profile VRAMLAB OUT_DIR
"""
import os
import pickle
import re
import subprocess
import sys

SKIP = 77


def run_viz(*args):
    result = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", *args],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"_memory_viz {' '.join(args)} exited {result.returncode}\n"
                           f"{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    profile_mode = len(sys.argv) == 4 and sys.argv[1] == "--profile"
    if len(sys.argv) != 3 and not profile_mode:
        print(__doc__)
        return 2
    try:
        import torch
        import torch.cuda._memory_viz as memory_viz
    except Exception as error:  # ImportError, or a broken install
        print(f"SKIP: PyTorch is not importable here ({error}); tools/setup.sh --with-peers "
              "makes venv-torch/ with PyTorch 2.x")
        return SKIP
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        print(f"SKIP: torch {torch.__version__} predates the snapshot format with frames "
              "(2.0); tools/setup.sh --with-peers makes venv-torch/ with PyTorch 2.x")
        return SKIP
    binary, out_dir = sys.argv[-2], sys.argv[-1]
    os.makedirs(out_dir, exist_ok=True)
    if profile_mode:
        profile_dir = os.path.join(out_dir, "profile")
        subprocess.run([binary, "train", "--layers", "1", "--hidden", "24", "--heads", "2",
                        "--vocab", "29", "--seq", "7", "--batch", "2", "--steps", "2",
                        "--device", "sim", "--profile", profile_dir], check=True)
        path = os.path.join(profile_dir, "snapshot.pickle")
    else:
        path = os.path.join(out_dir, "step.pickle")
        subprocess.run([binary, path], check=True)

    trace = run_viz("trace", path)
    # "b = a[4096:1.0KiB]": allocation b at offset 4096 of segment a (torch's trace notation).
    allocations = sum(1 for line in trace.splitlines() if re.match(r"^\w+ = \w+\[\d+:", line))
    if allocations == 0:
        print(f"FAIL: _memory_viz trace printed no allocation\n{trace[:2000]}")
        return 1
    run_viz("stats", path)
    html = os.path.join(out_dir, "trace_plot.html")
    run_viz("trace_plot", path, "-o", html)
    if os.path.getsize(html) == 0:
        print("FAIL: _memory_viz trace_plot wrote an empty page")
        return 1

    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    failures = []
    for name, function in (("memory", memory_viz.memory), ("segments", memory_viz.segments)):
        lines = function(snapshot, format_flamegraph=lambda text: text).splitlines()
        if profile_mode:
            # "...;vramlab::...;label SIZE": a C++ frame of vramlab and the label frame last.
            framed = [line for line in lines
                      if "vramlab::" in line and re.search(r":0:[^;]+ \d+$", line)]
            if not framed:
                failures.append(f"{name}(): no stack with a vramlab C++ frame and a label frame "
                                f"among {len(lines)} lines: {lines[:3]}")
            else:
                print(f"{name}(): {framed[0][:400]}...")
            continue
        # "stream_0;active_allocated;outermost;...;innermost;label SIZE": the label frame last.
        att = [line for line in lines if line.rsplit(" ", 1)[0].endswith(":0:blocks.0.att")]
        if not att:
            failures.append(f"{name}(): no stack ends in the label frame of blocks.0.att")
            continue
        if "blocks.0.attn:0:blocks.0.att" not in att[0]:
            failures.append(f"{name}(): the label frame is not module:0:tensor: {att[0]}")
        if "vramlab::nn::Attention::forward" not in att[0]:
            failures.append(f"{name}(): blocks.0.att's stack has no vramlab::nn::Attention::forward:"
                            f" {att[0]}")
        print(f"{name}(): {att[0][:400]}...")
    if failures:
        print("FAIL: " + "\nFAIL: ".join(failures))
        return 1
    if profile_mode:
        print(f"OK: torch {torch.__version__} _memory_viz ran trace ({allocations} allocations), "
              "stats and trace_plot on `vramlab train --profile`'s snapshot.pickle, and its "
              "memory()/segments() stacks show vramlab's C++ frames under the label frame")
        return 0
    print(f"OK: torch {torch.__version__} _memory_viz ran trace ({allocations} allocations), "
          "stats and trace_plot, and its memory()/segments() stacks show blocks.0.att allocated "
          "in vramlab::nn::Attention::forward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
