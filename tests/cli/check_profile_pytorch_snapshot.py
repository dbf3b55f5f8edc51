#!/usr/bin/env python3
"""`vramlab profile` on snapshots in PyTorch 2.x's own schema, pickled by Python as
torch.cuda.memory._dump_snapshot() does (protocol 4, one frames list shared by every entry with
the same stack, no vramlab keys): the peak, its owner, the groups by stack and the largest
allocations equal an independent replay written here; --compare finds the planted leak.
Usage: check_profile_pytorch_snapshot.py VRAMLAB OUT_DIR
"""
import json
import os
import pickle
import random
import subprocess
import sys

MIB = 1 << 20


def make_stacks(rng):
    """Python and C++ frames as PyTorch's snapshots carry them, innermost first."""
    stacks = {}
    for name in ["linear", "softmax", "layer_norm", "gelu", "adam_step", "embedding", "leaky_cache"]:
        frames = [{"filename": f"/torch/nn/{name}.py", "line": rng.randrange(1, 900), "name": name}]
        for depth in range(rng.randrange(2, 9)):
            frames.append({"filename": "/train.py", "line": 10 + depth, "name": f"caller{depth}"})
        stacks[name] = frames
    return stacks


def make_snapshot(seed, leaked_steps):
    rng = random.Random(seed)
    stacks = make_stacks(rng)
    trace, live, next_address = [], {}, [0x7F0000000000]

    def new_segment(size):
        address = next_address[0]
        next_address[0] += (size + 2 * MIB - 1) // (2 * MIB) * 2 * MIB
        return address

    # Two weights live before recording began: in "segments" only.
    before = {}
    for name in ["embedding", "linear"]:
        size = rng.randrange(1, 8 * MIB)
        before[new_segment(size)] = (size, name)
    live.update(before)

    def alloc(name, size):
        address = new_segment(size)
        trace.append({"action": "segment_alloc", "addr": address, "size": size, "stream": 0,
                      "frames": stacks[name]})
        trace.append({"action": "alloc", "addr": address, "size": size, "stream": 0,
                      "frames": stacks[name]})
        live[address] = (size, name)
        return address

    def free(address):
        size, name = live.pop(address)
        for action in ("free_requested", "free_completed"):
            trace.append({"action": action, "addr": address, "size": size, "stream": 0,
                          "frames": stacks[name]})

    for step in range(3):
        saved = [alloc(rng.choice(["linear", "softmax", "layer_norm", "gelu"]), rng.randrange(1, 5 * MIB))
                 for _ in range(rng.randrange(5, 12))]
        if step < leaked_steps:
            alloc("leaky_cache", 3 * MIB + step)
        temporary = alloc("adam_step", rng.randrange(1, 3 * MIB))
        for address in reversed(saved):
            free(address)
        free(temporary)

    segments = []
    for address, (size, name) in sorted(live.items()):
        segments.append({"device": 0, "address": address, "total_size": (size + 2 * MIB - 1) // (2 * MIB) * 2 * MIB,
                         "allocated_size": size, "active_size": size, "requested_size": size,
                         "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                         "is_expandable": False,
                         "blocks": [{"address": address, "size": size, "requested_size": size,
                                     "state": "active_allocated", "frames": stacks[name]}]})
    return {"segments": segments, "device_traces": [trace],
            "allocator_settings": {"expandable_segments": False}}, before


def replay_peak(snapshot, before):
    """The peak of live requested bytes and what was live there, by this script's own replay."""
    live = {address: (size, "") for address, (size, _) in before.items()}
    names = {}
    for address, (size, _) in before.items():
        for segment in snapshot["segments"]:
            if segment["address"] == address:
                names[address] = segment["blocks"][0]["frames"]
    total = sum(size for size, _ in live.values())
    peak, peak_event, at_peak = total, -1, dict(live)
    for index, entry in enumerate(snapshot["device_traces"][0]):
        if entry["action"] == "alloc":
            live[entry["addr"]] = (entry["size"], entry["frames"])
            total += entry["size"]
        elif entry["action"] == "free_completed":
            total -= live.pop(entry["addr"])[0]
        if total > peak:
            peak, peak_event, at_peak = total, index, dict(live)
    for address, (size, frames) in at_peak.items():
        if frames == "":
            at_peak[address] = (size, names[address])
    return peak, peak_event, at_peak


def stack_key(frames):
    return " ← ".join(frame["name"] for frame in frames[:4])


def run(vramlab, *args):
    result = subprocess.run([vramlab, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"vramlab {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    vramlab, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, leaked_steps in (("before", 0), ("after", 3)):
        snapshot, before = make_snapshot(11, leaked_steps)
        path = os.path.join(out_dir, f"{name}.pickle")
        with open(path, "wb") as f:
            pickle.dump(snapshot, f, protocol=4)
        paths[name] = path
        peak, peak_event, at_peak = replay_peak(snapshot, before)
        report = run(vramlab, "profile", path, "--json", "--top", "1000")
        assert report["peak_bytes"] == peak, (name, report["peak_bytes"], peak)
        assert report["peak_event"] == peak_event, (name, report["peak_event"], peak_event)
        owner_frames = snapshot["device_traces"][0][peak_event]["frames"]
        assert report["peak_owner"]["name"] == owner_frames[0]["name"], report["peak_owner"]
        assert [f["name"] for f in report["peak_owner"]["frames"]] == [f["name"] for f in owner_frames]
        assert report["peak_owner"]["module"] == "", "a PyTorch snapshot has no module"
        expected_stacks = {}
        for size, frames in at_peak.values():
            key = stack_key(frames)
            bytes_, count = expected_stacks.get(key, (0, 0))
            expected_stacks[key] = (bytes_ + size, count + 1)
        got_stacks = {g["key"]: (g["bytes"], g["count"]) for g in report["by_stack"]}
        assert got_stacks == expected_stacks, (name, got_stacks, expected_stacks)
        sizes = sorted((size for size, _ in at_peak.values()), reverse=True)
        assert [a["bytes"] for a in report["top_at_peak"]] == sizes, name
        assert report["per_module_bytes"] == {"(none)": peak}, report["per_module_bytes"]
    compare = run(vramlab, "profile", "--compare", paths["before"], paths["after"], "--json")
    first = compare["changed"][0]
    assert first["stack"].startswith("leaky_cache"), first
    assert (first["count_before"], first["count_after"]) == (0, 3), first
    assert first["bytes_after"] == 3 * (3 * MIB) + 0 + 1 + 2, first
    assert first["leak_suspect"] is True
    assert compare["growth_bytes"] == first["bytes_after"], compare["growth_bytes"]
    print("PASS: vramlab profile reads PyTorch-schema pickles: peak, owner, stacks, top allocations "
          "and the planted leak agree with an independent replay")
    return 0


if __name__ == "__main__":
    sys.exit(main())
