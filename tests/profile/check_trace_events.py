#!/usr/bin/env python3
"""An independent checker of Chrome trace-event JSON (the format chrome://tracing, Perfetto and
torch.profiler's export_chrome_trace() use), written from the format's rules, not from vramlab's
writer:

- the file is an object with a "traceEvents" array (or the bare array form);
- every event is an object with "name" (string), "ph" (string), "ts" (finite number), "pid" and
  "tid" (integers);
- "X" (complete) events have a finite "dur" >= 0; on one (pid, tid) they nest properly: an event
  that starts inside another ends inside it too;
- "C" (counter) events have a non-empty "args" object of numbers; per (pid, name) their "ts" never
  decreases;
- "M" (metadata) events name the process ("process_name") and threads ("thread_name") with a
  string args.name; every pid with events has a process_name and every (pid, tid) with "X" events
  a thread_name;
- "displayTimeUnit", when present, is "ms" or "ns".
Timestamps are microseconds; comparisons allow 1 ns (0.001 us) of rounding.

Usage:
  check_trace_events.py FILE...                 check trace files
  check_trace_events.py --generate BINARY DIR   run BINARY DIR, then check every DIR/*.json
  check_trace_events.py --self-test             check that every rule rejects a trace breaking it
Exit 0 when every file passes, 1 otherwise.
"""
import glob
import json
import math
import os
import subprocess
import sys

EPSILON_US = 1e-3
KNOWN_PHASES = set("BEXIiCbneSTpFsftPOoNDM") | {"R", "c", "(", ")"}
METADATA_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name",
                  "thread_sort_index"}


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_trace(trace):
    """Returns a list of error messages (empty when the trace follows the rules)."""
    errors = []
    if isinstance(trace, dict):
        if "traceEvents" not in trace or not isinstance(trace["traceEvents"], list):
            return ["top level: an object needs a 'traceEvents' array"]
        events = trace["traceEvents"]
        unit = trace.get("displayTimeUnit", "ms")
        if unit not in ("ms", "ns"):
            errors.append(f"displayTimeUnit {unit!r} is neither 'ms' nor 'ns'")
    elif isinstance(trace, list):
        events = trace
    else:
        return ["top level: neither an object nor an array"]

    complete = {}          # (pid, tid) -> [(ts, dur, index)]
    counter_last = {}      # (pid, name) -> last ts
    named_processes, named_threads = set(), set()
    used_processes = set()
    for index, event in enumerate(events):
        where = f"traceEvents[{index}]"
        if not isinstance(event, dict):
            errors.append(f"{where}: not an object")
            continue
        bad = False
        for key, test, what in (("name", lambda v: isinstance(v, str), "a string"),
                                ("ph", lambda v: isinstance(v, str), "a string"),
                                ("ts", is_number, "a finite number"),
                                ("pid", is_integer, "an integer"),
                                ("tid", is_integer, "an integer")):
            if key not in event:
                errors.append(f"{where}: no '{key}'")
                bad = True
            elif not test(event[key]):
                errors.append(f"{where}: '{key}' is {event[key]!r}, not {what}")
                bad = True
        if bad:
            continue
        ph, pid, tid, ts = event["ph"], event["pid"], event["tid"], event["ts"]
        used_processes.add(pid)
        if ph not in KNOWN_PHASES:
            errors.append(f"{where}: unknown phase {ph!r}")
        elif ph == "X":
            dur = event.get("dur")
            if not is_number(dur) or dur < 0:
                errors.append(f"{where}: complete event with dur {dur!r} (needs a number >= 0)")
            else:
                complete.setdefault((pid, tid), []).append((ts, dur, index))
        elif ph == "C":
            args = event.get("args")
            if not isinstance(args, dict) or not args:
                errors.append(f"{where}: counter without an args object")
            else:
                for key, value in args.items():
                    if not is_number(value):
                        errors.append(f"{where}: counter value {key!r} = {value!r} is not a number")
            key = (pid, event["name"])
            if key in counter_last and ts < counter_last[key] - EPSILON_US:
                errors.append(f"{where}: counter {event['name']!r} goes back in time "
                              f"({ts} after {counter_last[key]})")
            counter_last[key] = max(ts, counter_last.get(key, ts))
        elif ph == "M":
            name, args = event["name"], event.get("args")
            if name not in METADATA_NAMES:
                errors.append(f"{where}: unknown metadata {name!r}")
            elif name in ("process_name", "thread_name"):
                if not isinstance(args, dict) or not isinstance(args.get("name"), str):
                    errors.append(f"{where}: {name} without a string args.name")
                elif name == "process_name":
                    named_processes.add(pid)
                else:
                    named_threads.add((pid, tid))

    for (pid, tid), spans in complete.items():
        if (pid, tid) not in named_threads:
            errors.append(f"pid {pid} tid {tid}: complete events on a thread without a thread_name")
        # Outer first at equal starts: longer spans enclose shorter ones.
        spans.sort(key=lambda span: (span[0], -span[1], span[2]))
        stack = []  # end times of the open spans
        for ts, dur, index in spans:
            while stack and stack[-1][0] <= ts + EPSILON_US:
                stack.pop()
            end = ts + dur
            if stack and end > stack[-1][0] + EPSILON_US:
                errors.append(f"traceEvents[{index}] ({ts} + {dur}) overlaps traceEvents"
                              f"[{stack[-1][1]}] (ends {stack[-1][0]}) without nesting in it")
            stack.append((end, index))
    for pid in sorted(used_processes - named_processes):
        errors.append(f"pid {pid}: no process_name metadata")
    return errors


def check_files(paths):
    failed = False
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            trace = json.load(handle)
        errors = check_trace(trace)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        counts = {}
        for event in events if isinstance(events, list) else []:
            if isinstance(event, dict):
                counts[event.get("ph")] = counts.get(event.get("ph"), 0) + 1
        summary = ", ".join(f"{count} {ph}" for ph, count in sorted(counts.items(), key=str))
        if errors:
            failed = True
            print(f"FAIL {path}: {len(errors)} errors ({summary})")
            for error in errors[:20]:
                print(f"  {error}")
        else:
            print(f"ok   {path}: {summary}")
    return 1 if failed else 0


def self_test():
    def event(ph, name="e", ts=0.0, **extra):
        item = {"name": name, "ph": ph, "ts": ts, "pid": 0, "tid": 0}
        item.update(extra)
        return item

    meta = [event("M", "process_name", args={"name": "p"}),
            event("M", "thread_name", args={"name": "t"})]
    good = {"traceEvents": meta + [event("X", "outer", 0.0, dur=10.0),
                                   event("X", "inner", 2.0, dur=8.0),
                                   event("X", "next", 10.0, dur=1.0),
                                   event("C", "mem", 0.0, args={"a": 1, "b": 2.5}),
                                   event("C", "mem", 0.0, args={"a": 2, "b": 0})],
            "displayTimeUnit": "ms"}
    bad = {
        "no traceEvents": {"events": []},
        "missing ts": {"traceEvents": meta + [{"name": "x", "ph": "X", "pid": 0, "tid": 0,
                                               "dur": 1}]},
        "string pid": {"traceEvents": meta + [event("X", dur=1.0, pid="0")]},
        "negative dur": {"traceEvents": meta + [event("X", dur=-1.0)]},
        "X without dur": {"traceEvents": meta + [event("X")]},
        "partial overlap": {"traceEvents": meta + [event("X", "a", 0.0, dur=10.0),
                                                   event("X", "b", 5.0, dur=10.0)]},
        "counter string": {"traceEvents": meta + [event("C", "mem", args={"a": "1"})]},
        "counter bool": {"traceEvents": meta + [event("C", "mem", args={"a": True})]},
        "counter empty": {"traceEvents": meta + [event("C", "mem", args={})]},
        "counter back in time": {"traceEvents": meta + [event("C", "mem", 5.0, args={"a": 1}),
                                                        event("C", "mem", 4.0, args={"a": 1})]},
        "unnamed thread": {"traceEvents": meta[:1] + [event("X", dur=1.0)]},
        "unnamed process": {"traceEvents": meta[1:] + [event("X", dur=1.0)]},
        "nan ts": {"traceEvents": meta + [event("X", ts=float("nan"), dur=1.0)]},
        "unknown phase": {"traceEvents": meta + [event("Q")]},
        "bad unit": {"traceEvents": meta, "displayTimeUnit": "s"},
    }
    failures = []
    if check_trace(good):
        failures.append(f"a good trace was rejected: {check_trace(good)}")
    for name, trace in bad.items():
        if not check_trace(trace):
            failures.append(f"'{name}' was accepted")
    for failure in failures:
        print(f"FAIL {failure}")
    if not failures:
        print(f"ok   the good trace passes and all {len(bad)} broken ones are rejected")
    return 1 if failures else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) == 4 and argv[1] == "--generate":
        binary, directory = argv[2], argv[3]
        os.makedirs(directory, exist_ok=True)
        subprocess.run([binary, directory], check=True)
        paths = sorted(glob.glob(os.path.join(directory, "*.json")))
        if not paths:
            print(f"FAIL {binary} wrote no .json file into {directory}")
            return 1
        return check_files(paths)
    if len(argv) >= 2 and not argv[1].startswith("--"):
        return check_files(argv[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
