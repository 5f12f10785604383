#!/usr/bin/env python3
"""bench_binding: what the Python binding costs. `c = a + b` streamed per operator and the
`(a + b).numpy()` round trip from Python, in thread and process mode, against the same from C++:
ag-bench's streamed per-step and read round trip (which do exactly this on 4096 floats), run in the
same run, and the round trip timed from C++ in the same runtime, one trip of each in turn (in an
order drawn for each pair), the median difference over three runtimes per mode (a process-mode
runtime's read latency settles at a level that differs between runtimes, so only trips of one
runtime tell the binding's cost apart).
Figures only: nothing is asserted (docs/BENCHMARKS.md).

    PYTHONPATH=build/python python3 apps/python/bench_binding.py --devices=sim:0 \\
        --ag-bench=build/apps/ag-bench [--quick] [--json=FILE]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import actorgraph as ag

ELEMENTS = 4096  # ag-bench's streamed add (apps/ag-bench/mode_bench.hpp)


def measure(devices, process, steps, trips):
    """Python's figures in one mode: us per streamed add; the median us of Python's read round
    trips, of C++'s in the same runtime, and of their differences, trip by trip."""
    from actorgraph._actorgraph import _reference
    with ag.Runtime(devices=devices, per_device_per_process=process) as rt:
        where = rt.devices[0]
        a = rt.full((ELEMENTS,), 1.5, where)
        b = rt.full((ELEMENTS,), 2.5, where)
        for n in (max(100, steps // 20), steps):  # a warm-up, then the measurement
            rt.sync()
            t0 = time.perf_counter()
            for _ in range(n):
                c = a + b
            rt.sync()
            streamed = (time.perf_counter() - t0) / n * 1e6
        del c
        py_times, cpp_times = [], []
        # Which of the two goes first is drawn for each pair: in a fixed order, the releases of
        # one trip's temporaries (which the executor holds a moment for what follows) can fall
        # on the same one of the two every time.
        first = random.Random(7)
        for i in range(trips + 10):
            cpp_first = first.random() < 0.5
            if cpp_first:
                cpp = _reference.round_trip(a, b)
            t0 = time.perf_counter()
            v = (a + b).numpy()
            took = (time.perf_counter() - t0) * 1e6
            if not cpp_first:
                cpp = _reference.round_trip(a, b)
            if i >= 10:  # the first ones warm up the copy path
                py_times.append(took)
                cpp_times.append(cpp)
            if v.shape != (ELEMENTS,) or v[0] != 4.0:
                raise SystemExit("round trip: wrong result")
        extra = statistics.median(p - c for p, c in zip(py_times, cpp_times))
        return streamed, statistics.median(py_times), statistics.median(cpp_times), extra


def cpp_figures(ag_bench, devices, quick):
    """ag-bench's figures of both modes on the same devices, run now."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        argv = [ag_bench, f"--devices={devices}", "--mode=both", f"--json={out}"]
        r = subprocess.run(argv + (["--quick"] if quick else []), capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed:\n{r.stdout}{r.stderr}")
        with open(out) as f:
            return json.load(f)["modes"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--devices", default="sim:0")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--ag-bench", default=os.path.join(here, "..", "..", "build", "apps", "ag-bench"))
    p.add_argument("--quick", action="store_true", help="fewer steps, for a smoke test")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args()
    steps, trips, runtimes = (2000, 100, 1) if args.quick else (50000, 3000, 3)
    cpp = cpp_figures(args.ag_bench, args.devices, args.quick)
    rows = []
    for mode in ("thread", "process"):
        # Each runtime settles at a latency level of its own: the medians over several.
        runs = [measure(args.devices, mode == "process", steps, trips) for _ in range(runtimes)]
        streamed, trip, same_trip, extra = (statistics.median(r[i] for r in runs) for i in range(4))
        rows.append({"mode": mode, "python_streamed_us": streamed,
                     "cpp_streamed_us": cpp[mode]["streamed_us"], "python_round_trip_us": trip,
                     "cpp_round_trip_us": cpp[mode]["round_trip_us"],
                     "cpp_same_runtime_round_trip_us": same_trip, "round_trip_extra_us": extra,
                     "round_trip_extra_us_by_runtime": [r[3] for r in runs]})
    print(f"bench_binding: {args.devices}{' (quick)' if args.quick else ''}")
    print(f"{'measure':<34}{'mode':<9}{'Python':>10}{'C++':>10}  against C++   target")
    for r in rows:
        ratio = r["python_streamed_us"] / r["cpp_streamed_us"]
        print(f"{'c = a + b streamed, us per op':<34}{r['mode']:<9}{r['python_streamed_us']:>10.2f}"
              f"{r['cpp_streamed_us']:>10.2f}  {ratio:>5.2f}x       <= 1.5x")
    for r in rows:
        print(f"{'(a + b).numpy() round trip, us':<34}{r['mode']:<9}"
              f"{r['python_round_trip_us']:>10.2f}{r['cpp_same_runtime_round_trip_us']:>10.2f}"
              f"  {r['round_trip_extra_us']:>+6.2f} us    <= +5 us")
    print(f"(round trip: C++ timed in the same runtime, trip by trip, the median difference; the "
          f"median over {runtimes} runtime(s) per mode: "
          + "; ".join(r["mode"] + " " + ", ".join(f"{x:+.2f}" for x in r["round_trip_extra_us_by_runtime"])
                      for r in rows) + " us; "
          "ag-bench's own run: " + ", ".join(f"{r['mode']} {r['cpp_round_trip_us']:.2f} us"
                                             for r in rows) + ")")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"devices": args.devices, "quick": args.quick, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
