#!/usr/bin/env python3
"""Checks vramlab's pickle writer against Python's own unpickler.

Runs CASES_BINARY OUT_DIR, then for every <name>.json / <name>.pickle pair asserts that
pickle.load() gives exactly the JSON value, with exact Python types (bool is not int, int is not
float) and arrays under the key "segment_pool_id" as tuples; that every opcode belongs to
protocol <= 2; and that special_floats.pickle holds [inf, -inf, nan, -0.0, 5e-324].
Usage: check_pickle_roundtrip.py CASES_BINARY OUT_DIR
"""
import json
import math
import os
import pickle
import pickletools
import subprocess
import sys


def expected_from_json(value, key=None):
    if isinstance(value, dict):
        return {k: expected_from_json(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [expected_from_json(v) for v in value]
        return tuple(items) if key == "segment_pool_id" else items
    return value


def same(expected, actual, where):
    if type(expected) is not type(actual):
        raise AssertionError(f"{where}: type {type(actual).__name__}, expected {type(expected).__name__}"
                             f" ({actual!r} vs {expected!r})")
    if isinstance(expected, dict):
        if list(expected.keys()) != list(actual.keys()):
            raise AssertionError(f"{where}: keys {list(actual.keys())[:10]} vs {list(expected.keys())[:10]}")
        for k in expected:
            same(expected[k], actual[k], f"{where}[{k!r}]")
    elif isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            raise AssertionError(f"{where}: length {len(actual)} vs {len(expected)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            same(e, a, f"{where}[{i}]")
    elif expected != actual:
        raise AssertionError(f"{where}: {actual!r} != {expected!r}")


def max_protocol(data):
    highest = 0
    for opcode, arg, _ in pickletools.genops(data):
        highest = max(highest, opcode.proto)
        if opcode.name == "PROTO" and arg != 2:
            raise AssertionError(f"PROTO {arg}, expected 2")
    return highest


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([binary, out_dir], check=True)
    names = sorted(f[:-5] for f in os.listdir(out_dir) if f.endswith(".json"))
    if len(names) < 40:
        raise AssertionError(f"only {len(names)} cases written to {out_dir}")
    for name in names:
        with open(os.path.join(out_dir, name + ".json"), encoding="utf-8") as f:
            expected = expected_from_json(json.load(f))
        with open(os.path.join(out_dir, name + ".pickle"), "rb") as f:
            data = f.read()
        protocol = max_protocol(data)
        if protocol > 2:
            raise AssertionError(f"{name}: uses a protocol-{protocol} opcode")
        same(expected, pickle.loads(data), name)
    with open(os.path.join(out_dir, "special_floats.pickle"), "rb") as f:
        floats = pickle.load(f)
    assert floats[0] == math.inf and floats[1] == -math.inf, floats
    assert math.isnan(floats[2]), floats
    assert floats[3] == 0.0 and math.copysign(1.0, floats[3]) < 0, floats
    assert floats[4] == 5e-324, floats
    snapshot = pickle.load(open(os.path.join(out_dir, "training_snapshot.pickle"), "rb"))
    assert isinstance(snapshot["segments"][0]["segment_pool_id"], tuple)
    print(f"OK: {len(names)} pickles load in Python {sys.version.split()[0]} exactly as their JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
