#!/usr/bin/env python3
"""Opens vramlab's snapshot pickle with PyTorch's own memory_viz tool, when PyTorch is installed.

Runs CASES_BINARY OUT_DIR (which writes training_snapshot.pickle), then runs
`python3 -m torch.cuda._memory_viz stats|segments|trace FILE` for the subcommands this torch
version offers. `segments` renders a flamegraph with a downloaded script in some versions, so the
module's segments() function is also called directly with an identity formatter.
Exits 77 (ctest SKIP_RETURN_CODE) with a reason when torch cannot be imported.
Usage: check_torch_memory_viz.py CASES_BINARY OUT_DIR
       check_torch_memory_viz.py --pickle=SNAPSHOT.pickle OUT_DIR   (an existing snapshot)
"""
import os
import subprocess
import sys

SKIP = 77


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    try:
        import torch  # noqa: F401
        import torch.cuda._memory_viz as memory_viz
    except Exception as error:  # ImportError, or a broken install
        print(f"SKIP: PyTorch is not importable here ({error}); install Debian's python3-torch to run this check")
        return SKIP
    if sys.argv[1] == "--pickle":
        print(__doc__)
        return 2
    if sys.argv[1].startswith("--pickle="):
        path, out_dir = sys.argv[1][len("--pickle="):], sys.argv[2]
        os.makedirs(out_dir, exist_ok=True)
    else:
        binary, out_dir = sys.argv[1], sys.argv[2]
        os.makedirs(out_dir, exist_ok=True)
        subprocess.run([binary, out_dir], check=True)
        path = os.path.join(out_dir, "training_snapshot.pickle")

    # torch < 2.0 (Debian 12 ships 1.13) reads the older snapshot format: the bare list of
    # segments that torch.cuda.memory_snapshot() returned then, which is our snapshot's "segments"
    # member. Newer torch reads the whole dict. Feed each version the format it documents.
    import pickle
    with open(path, "rb") as f:
        full = pickle.load(f)
    if not isinstance(full, dict) or "segments" not in full or "device_traces" not in full:
        print("FAIL: the snapshot pickle is not a dict with segments and device_traces")
        return 1
    if int(torch.__version__.split(".")[0]) < 2:
        path = os.path.join(out_dir, "training_snapshot_segments.pickle")
        with open(path, "wb") as f:
            pickle.dump(full["segments"], f, protocol=2)
        print(f"torch {torch.__version__} predates the dict snapshot format: checking its segments list")

    help_text = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", "--help"],
                               capture_output=True, text=True).stdout
    ran = []
    for command in ("stats", "trace"):
        if command not in help_text:
            continue
        result = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", command, path],
                                capture_output=True, text=True)
        if result.returncode != 0 or not result.stdout.strip():
            print(f"FAIL: _memory_viz {command} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
            return 1
        ran.append(command)
    if hasattr(memory_viz, "segments"):
        with open(path, "rb") as f:
            snapshot = pickle.load(f)
        try:
            collapsed = memory_viz.segments(snapshot, format_flamegraph=lambda text: text)
        except TypeError:
            collapsed = memory_viz.segments(snapshot)
        if not collapsed:
            print("FAIL: _memory_viz.segments() returned nothing")
            return 1
        ran.append("segments")
    if not ran:
        print(f"SKIP: torch {torch.__version__} offers none of stats/trace/segments")
        return SKIP
    print(f"OK: torch {torch.__version__} _memory_viz ran {', '.join(ran)} on {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
