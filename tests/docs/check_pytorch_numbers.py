#!/usr/bin/env python3
"""Lesson 01's page quotes what PyTorch's autograd saves for gpt2-tiny; re-measure it and compare.

    check_pytorch_numbers.py REPO_ROOT

Runs bench/train/pytorch_saved_activations.py --json under this interpreter and checks that the
page's "In PyTorch" section states the same bytes and storage count (in total and per block), so the quote cannot go stale
when the model or the script changes. Exits 77 (ctest SKIP_RETURN_CODE) when torch cannot be
imported, or when its version is not the one the page names (another version saves other tensors).
"""
import json
import re
import subprocess
import sys
from pathlib import Path


def main():
    root = Path(sys.argv[1]).resolve()
    try:
        import torch
    except ImportError as error:
        print(f"SKIP: PyTorch is not importable here ({error})")
        return 77
    page = (root / "lessons/01-memory-breakdown/README.md").read_text(encoding="utf-8")
    quoted = re.search(r"PyTorch (\d+\.\d+) on the CPU saves\s+([\d.]+) MiB in (\d+) storages", page)
    if not quoted:
        print("FAIL: the page no longer quotes PyTorch's saved bytes in the expected sentence")
        return 1
    version, mib, storages = quoted.group(1), quoted.group(2), int(quoted.group(3))
    split = re.search(r"storages,\s+([\d.]+) MiB per block and ([\d.]+) MiB outside the blocks",
                      page[quoted.start():])
    if not split:
        print("FAIL: the page no longer quotes PyTorch's saved bytes per block in the expected words")
        return 1
    if not torch.__version__.startswith(version + "."):
        print(f"SKIP: the page quotes PyTorch {version}, this is {torch.__version__}")
        return 77
    result = subprocess.run([sys.executable, str(root / "bench/train/pytorch_saved_activations.py"),
                             "--json"], check=True, capture_output=True, text=True)
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    got_mib = f"{measured['saved_bytes'] / 2**20:.2f}"
    if (got_mib, measured["storages"]) != (mib, storages):
        print(f"FAIL: the page says {mib} MiB in {storages} storages, PyTorch {torch.__version__} "
              f"saves {got_mib} MiB in {measured['storages']} storages now")
        return 1
    per_block = {f"{nbytes / 2**20:.2f}" for nbytes in measured["saved_bytes_per_block"]}
    outside = f"{measured['saved_bytes_outside_blocks'] / 2**20:.2f}"
    if (per_block, outside) != ({split.group(1)}, split.group(2)):
        print(f"FAIL: the page says {split.group(1)} MiB per block and {split.group(2)} MiB outside "
              f"the blocks, PyTorch {torch.__version__} saves {sorted(per_block)} MiB per block "
              f"and {outside} MiB outside them now")
        return 1
    print(f"OK: PyTorch {torch.__version__} saves {got_mib} MiB in {storages} storages "
          f"({split.group(1)} MiB per block, {outside} MiB outside), as the page says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
