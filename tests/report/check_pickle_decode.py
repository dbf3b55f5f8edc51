#!/usr/bin/env python3
"""Checks vramlab's pickle reader against Python's own pickler.

Pickles random plain data (dicts with str and int keys, lists, tuples, str, int of every width,
float, bool, None; objects shared between places, as PyTorch shares one frames list between trace
entries; a snapshot-shaped value large enough for several protocol-4 frames) at protocols 2, 3, 4
and 5, has DECODE_BINARY decode each file, and asserts the decoded JSON equals the value (tuples
as lists, int keys as their decimal text), with ints and floats exact.
Usage: check_pickle_decode.py DECODE_BINARY OUT_DIR
"""
import json
import os
import pickle
import pickletools
import random
import subprocess
import sys

PIECES = ["a", "Z", "é", "→", "显存", "😀", '"', "\\", "\n", " ", "<", "\x00"]


def random_value(rng, depth, shared):
    kind = rng.randrange(10 if depth > 0 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        value = rng.getrandbits(rng.randrange(1, 64)) * rng.choice([1, -1])
        return value if rng.random() < 0.9 else rng.choice([2**63 - 1, -2**63, 2**64 - 1, 2**63])
    if kind == 3:
        return rng.uniform(-1, 1) * 10.0 ** rng.randrange(-300, 300)
    if kind in (4, 5):
        return "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 300 if rng.random() < 0.1 else 12)))
    if kind == 6:
        return rng.choice(shared) if shared else None
    length = 1000 + rng.randrange(1500) if depth <= 2 and rng.random() < 0.05 else rng.randrange(7)
    if kind == 7:
        return [random_value(rng, depth - 1, shared) for _ in range(length)]
    if kind == 8:
        return tuple(random_value(rng, depth - 1, shared) for _ in range(length))
    value = {}
    for _ in range(length):
        key = rng.randrange(-1000, 1000) if rng.random() < 0.2 else f"k{rng.randrange(length + 3)}"
        value[key] = random_value(rng, depth - 1, shared)
    return value


def snapshot_like(rng):
    """A value shaped like torch.cuda.memory._snapshot(): frames lists shared between entries."""
    stacks = [[{"filename": f"/src/model_{i}.py", "line": rng.randrange(1, 900), "name": f"forward_{j}"}
               for j in range(rng.randrange(1, 20))] for i in range(8)]
    trace = []
    for i in range(6000):
        trace.append({"action": rng.choice(["alloc", "free_requested", "free_completed"]),
                      "addr": 0x7F0000000000 + 512 * rng.randrange(1 << 20), "size": rng.randrange(1, 1 << 30),
                      "stream": 0, "time_us": i, "frames": rng.choice(stacks)})
    return {"segments": [{"device": 0, "address": 0x7F0000000000, "total_size": 1 << 31,
                          "segment_pool_id": (0, 0), "blocks": []}],
            "device_traces": [trace], "allocator_settings": {"expandable_segments": False}}


def expected_json(value):
    if isinstance(value, dict):
        return {str(k): expected_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [expected_json(v) for v in value]
    return value


def same(expected, actual, where):
    if isinstance(expected, bool) or expected is None or isinstance(expected, (int, float, str)):
        if type(expected) is not type(actual) or expected != actual:
            raise AssertionError(f"{where}: {actual!r} ({type(actual).__name__}), expected {expected!r}")
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(expected) != set(actual):
            raise AssertionError(f"{where}: keys differ ({sorted(actual)[:8] if isinstance(actual, dict) else actual!r})")
        for k in expected:
            same(expected[k], actual[k], f"{where}[{k!r}]")
        return
    if not isinstance(actual, list) or len(expected) != len(actual):
        raise AssertionError(f"{where}: {type(actual).__name__} of {len(actual)}, expected {len(expected)} items")
    for i, (e, a) in enumerate(zip(expected, actual)):
        same(e, a, f"{where}[{i}]")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    cases = {}
    for seed in range(40):
        rng = random.Random(seed)
        shared = []
        for _ in range(4):
            shared.append(random_value(rng, 2, []))
        cases[f"random{seed}"] = random_value(rng, 1 + seed % 5, shared)
    cases["snapshot_like"] = snapshot_like(random.Random(7))
    paths, expected, opcodes = [], {}, set()
    for name, value in cases.items():
        for protocol in (2, 3, 4, 5):
            path = os.path.join(out_dir, f"{name}.p{protocol}.pickle")
            data = pickle.dumps(value, protocol=protocol)
            opcodes.update(op.name for op, _, _ in pickletools.genops(data))
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
            expected[path] = expected_json(value)
    for needed in ("FRAME", "MEMOIZE", "BINPUT", "BINGET", "SHORT_BINUNICODE", "LONG1", "TUPLE3", "TUPLE"):
        if needed not in opcodes:
            raise AssertionError(f"the cases never made Python write {needed}: the test would not cover it")
    subprocess.run([binary] + paths, check=True)
    for path in paths:
        with open(path[: -len(".pickle")] + ".decoded.json", encoding="utf-8") as f:
            same(expected[path], json.load(f), os.path.basename(path))
    print(f"OK: {len(paths)} pickles written by Python {sys.version.split()[0]} at protocols 2-5 "
          f"decode exactly ({len(opcodes)} distinct opcodes: {', '.join(sorted(opcodes))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
