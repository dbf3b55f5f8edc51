#!/usr/bin/env python3
"""Every ctest test has a finite TIMEOUT sized to its normal time, so a hang is a failure.

Run by ctest (ctest.every_test_has_a_timeout) in the build directory:
  check_test_timeouts.py --ctest CTEST --build-dir BUILD --source-dir SRC --scale N
Checks, each failure naming the test:
  1. every test of `ctest --show-only=json-v1` has a TIMEOUT property, 0 < TIMEOUT <= 600 s x N
     (N: VRAMLAB_TEST_TIMEOUT_SCALE, 5 in Debug and sanitizer builds), except the placeholders
     gtest_discover_tests adds for a binary not built yet (NAME_NOT_BUILT, which fail anyway);
  2. where ctest has measured the test (BUILD/Testing/Temporary/CTestCostData.txt, its mean
     time), TIMEOUT >= 3 x that time: a tighter timeout would fail a slow but healthy run (the
     sizing rule in cmake/VramlabTargets.cmake is 10x and at least 60 s);
  3. every gtest_discover_tests call in the source tree has a DISCOVERY_TIMEOUT (listing a
     binary's tests runs it, and a binary that hangs at start would stall the configure).
--self-test checks that each rule rejects what it should.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

MAX_TIMEOUT_SECONDS = 600
MIN_MARGIN = 3.0


def timeout_problems(tests, cost, scale):
    """Returns (problems, checked, skipped) for the tests of ctest's json-v1 `tests` list."""
    problems = []
    checked = skipped = 0
    cap = MAX_TIMEOUT_SECONDS * scale
    for test in tests:
        name = test["name"]
        if name.endswith("_NOT_BUILT"):
            skipped += 1
            continue
        checked += 1
        properties = {p["name"]: p["value"] for p in test.get("properties", [])}
        timeout = properties.get("TIMEOUT")
        if timeout is None:
            problems.append(f"{name}: no TIMEOUT (a hang would stall the run)")
            continue
        timeout = float(timeout)
        if not 0 < timeout <= cap:
            problems.append(f"{name}: TIMEOUT {timeout:g} s is not in (0, {cap:g}] s")
            continue
        mean = cost.get(name)
        if mean is not None and timeout < MIN_MARGIN * mean:
            problems.append(f"{name}: TIMEOUT {timeout:g} s is less than {MIN_MARGIN:g}x its "
                            f"measured {mean:.1f} s")
    return problems, checked, skipped


def read_cost_data(path):
    return parse_cost_data(path.read_text(errors="replace")) if path.is_file() else {}


def parse_cost_data(text):
    """ctest's CTestCostData.txt: 'NAME RUNS MEAN_SECONDS' lines (names may hold spaces), then
    '---' and the failed tests."""
    cost = {}
    for line in text.splitlines():
        if line.startswith("---"):
            break
        parts = line.rsplit(" ", 2)
        if len(parts) != 3:
            continue
        try:
            cost[parts[0]] = float(parts[2])
        except ValueError:
            continue
    return cost


def discovery_problems(source_dir):
    problems = []
    skip = {"build", "build-debug", "build-asan", ".git", "_deps"}
    files = [p for pattern in ("CMakeLists.txt", "*.cmake") for p in source_dir.rglob(pattern)
             if not skip.intersection(p.relative_to(source_dir).parts)]
    for path in sorted(files):
        problems += discovery_problems_in(path.read_text(errors="replace"),
                                          str(path.relative_to(source_dir)))
    return problems


def discovery_problems_in(text, where):
    problems = []
    for match in re.finditer(r"^[ \t]*gtest_discover_tests\(", text, re.MULTILINE):
        depth, end = 1, match.end()
        while end < len(text) and depth > 0:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        call = text[match.start():end]
        if "DISCOVERY_TIMEOUT" not in call:
            line = text.count("\n", 0, match.start()) + 1
            problems.append(f"{where}:{line}: gtest_discover_tests without DISCOVERY_TIMEOUT")
    return problems


def self_test():
    good = {"name": "A.b", "properties": [{"name": "TIMEOUT", "value": 60}]}
    cases = [
        ([good], {}, 0),
        ([{"name": "A.c", "properties": [{"name": "LABELS", "value": ["x"]}]}], {}, 1),
        ([{"name": "A.d", "properties": [{"name": "TIMEOUT", "value": 0}]}], {}, 1),
        ([{"name": "A.e", "properties": [{"name": "TIMEOUT", "value": 601}]}], {}, 1),
        ([good], {"A.b": 25.0}, 1),  # 60 s < 3 x 25 s
        ([good], {"A.b": 19.0}, 0),
        ([{"name": "t_NOT_BUILT"}], {}, 0),
    ]
    failures = 0
    for tests, cost, expected in cases:
        problems, _, _ = timeout_problems(tests, cost, 1)
        if len(problems) != expected:
            print(f"self-test: {tests} with cost {cost}: {problems}, expected {expected}")
            failures += 1
    if timeout_problems([{"name": "A.f", "properties": [{"name": "TIMEOUT", "value": 3000}]}],
                        {}, 5)[0]:
        print("self-test: a scaled timeout of 3000 s was rejected at scale 5")
        failures += 1
    if len(discovery_problems_in("gtest_discover_tests(x\n  PROPERTIES TIMEOUT 5)\n", "t")) != 1:
        print("self-test: a gtest_discover_tests without DISCOVERY_TIMEOUT passed")
        failures += 1
    if discovery_problems_in("gtest_discover_tests(x DISCOVERY_TIMEOUT 60\n PROPERTIES)\n", "t"):
        print("self-test: a gtest_discover_tests with DISCOVERY_TIMEOUT was rejected")
        failures += 1
    cost = parse_cost_data("a b (64, 256) 2 768\nc 1 0.5\n---\nc\n")
    if cost != {"a b (64, 256)": 768.0, "c": 0.5}:
        print(f"self-test: cost data parsed as {cost}")
        failures += 1
    print("self-test:", "ok" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctest", default="ctest")
    parser.add_argument("--build-dir", type=pathlib.Path)
    parser.add_argument("--source-dir", type=pathlib.Path)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if args.build_dir is None or args.source_dir is None:
        parser.error("--build-dir and --source-dir are required")
    listing = subprocess.run([args.ctest, "--show-only=json-v1"], cwd=args.build_dir,
                             capture_output=True, text=True, timeout=120, check=True)
    tests = json.loads(listing.stdout)["tests"]
    cost = read_cost_data(args.build_dir / "Testing" / "Temporary" / "CTestCostData.txt")
    problems, checked, skipped = timeout_problems(tests, cost, args.scale)
    problems += discovery_problems(args.source_dir)
    measured = sum(1 for t in tests if t["name"] in cost)
    print(f"{checked} tests checked ({measured} with a measured time), {skipped} placeholders of "
          f"unbuilt binaries skipped, timeout scale {args.scale}")
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problems")
        return 1
    print("ok: every test has a finite timeout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
