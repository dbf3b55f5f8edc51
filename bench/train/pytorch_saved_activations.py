#!/usr/bin/python3
"""What PyTorch's autograd saves for backward in one forward of gpt2-tiny (B=8, T=128, fp32), on the CPU.

    /usr/bin/python3 bench/train/pytorch_saved_activations.py [--json]

The model is compare_pytorch.py's gpt2-tiny, the same shapes lesson 01 measures by default. Every
tensor autograd saves passes through a saved_tensors_hooks pack hook
(torch.autograd.graph.saved_tensors_hooks); the bytes are counted once per storage, because a view
(q, k and v of one qkv output) saves no new memory, and parameters are left out, because they exist
whether or not anything is saved. The result is the memory a CUDA run would hold in activations at
the end of forward; counting it needs no GPU. Compare lesson 01's "activations (saved)" row.
Per block, a storage counts for the block whose forward saved it first (its input, which its first
LayerNorm saves, counts for it), as lesson 01 counts a layer; the rest is outside the blocks.
"""
import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_pytorch as gpt2_tiny  # noqa: E402  (the shared model definition)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("PyTorch not found: run this script with /usr/bin/python3 (Debian's python3-torch)")
    torch.manual_seed(1)
    model = gpt2_tiny.build_torch_model(torch)
    parameter_storages = {p.data_ptr() for p in model.parameters()}
    idx = torch.randint(0, gpt2_tiny.VOCAB, (gpt2_tiny.BATCH, gpt2_tiny.SEQ))
    targets = torch.randint(0, gpt2_tiny.VOCAB, (gpt2_tiny.BATCH, gpt2_tiny.SEQ))

    storages = {}  # storage address -> (bytes, dtype, shape of the first tensor saved from it)
    block_of = {}  # storage address -> the block whose forward saved it first (-1: outside them)
    saves = 0
    current_block = -1

    def entering(index):
        def hook(_module, _inputs):
            nonlocal current_block
            current_block = index
        return hook

    def leaving(_module, _inputs, _output):
        nonlocal current_block
        current_block = -1

    for index, block in enumerate(model.blocks):
        block.register_forward_pre_hook(entering(index))
        block.register_forward_hook(leaving)

    def pack(tensor):
        nonlocal saves
        saves += 1
        storage = tensor.storage()
        if storage.data_ptr() not in parameter_storages:
            storages.setdefault(storage.data_ptr(),
                                (storage.nbytes(), str(tensor.dtype).replace("torch.", ""),
                                 tuple(tensor.shape)))
            block_of.setdefault(storage.data_ptr(), current_block)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(idx, targets)
    loss.backward()  # the graph was complete: backward runs on what was saved

    total = sum(nbytes for nbytes, _, _ in storages.values())
    per_block = [0] * len(model.blocks)
    for address, (nbytes, _, _) in storages.items():
        if block_of[address] >= 0:
            per_block[block_of[address]] += nbytes
    outside = total - sum(per_block)
    by_kind = collections.Counter()
    count = collections.Counter()
    for nbytes, dtype, shape in storages.values():
        by_kind[(dtype, shape)] += nbytes
        count[(dtype, shape)] += 1
    if args.json:
        print(json.dumps({"torch": torch.__version__, "saved_bytes": total, "storages": len(storages),
                          "saved_tensors": saves, "saved_bytes_per_block": per_block,
                          "saved_bytes_outside_blocks": outside}))
        return
    mib = 1024 * 1024
    print(f"torch {torch.__version__}: gpt2-tiny B={gpt2_tiny.BATCH} T={gpt2_tiny.SEQ}, fp32, one forward")
    print(f"autograd saved {saves} tensors in {len(storages)} storages (parameters excluded): "
          f"{total / mib:.2f} MiB")
    print(f"  per block (saved during its forward): "
          f"{', '.join(f'{nbytes / mib:.2f}' for nbytes in per_block)} MiB; "
          f"outside the blocks: {outside / mib:.2f} MiB")
    print("  storages (dtype, shape)            count       bytes")
    for (dtype, shape), nbytes in sorted(by_kind.items(), key=lambda item: -item[1]):
        print(f"  {dtype:8} {str(shape):24} {count[(dtype, shape)]:6}  {nbytes / mib:8.2f} MiB")


if __name__ == "__main__":
    main()
