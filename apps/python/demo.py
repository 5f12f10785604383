#!/usr/bin/env python3
"""demo: the runtime from Python, as ag-demo shows it from C++. c = a + b on every device, then a
two-layer MLP forward pass on every device, each checked against NumPy, in thread mode and in
process mode side by side: the same values in both.

    PYTHONPATH=build/python python3 apps/python/demo.py [--devices=sim:0,sim:1] [--size=N]
"""
import argparse
import sys
import time

import numpy as np

import actorgraph as ag


def run(mode, devices, size):
    """Rows of (what, value, error against NumPy, ms) on each device, in `mode`."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    w1 = rng.standard_normal((size, size), dtype=np.float32) / np.sqrt(size)
    w2 = rng.standard_normal((size, 10), dtype=np.float32) / np.sqrt(size)
    rows = []
    t0 = time.perf_counter()
    with ag.Runtime(devices=devices, per_device_per_process=mode == "process") as rt:
        rows.append(("ready (runtime constructed)", None, None, (time.perf_counter() - t0) * 1e3))
        for where in rt.devices:
            t0 = time.perf_counter()
            c = rt.tensor(a, device=where) + rt.tensor(b, device=where)
            got = c.numpy()
            rows.append((f"c = a + b on {where}", float(got.sum()),
                         float(np.abs(got - (a + b)).max()), (time.perf_counter() - t0) * 1e3))
            t0 = time.perf_counter()
            x = rt.tensor(a, device=where)
            h = ag.relu(x @ rt.tensor(w1, device=where))
            out = ag.softmax(h @ rt.tensor(w2, device=where), -1).numpy()
            ref = np.maximum(a.astype(np.float64) @ w1, 0) @ w2
            ref = np.exp(ref - ref.max(-1, keepdims=True))
            ref /= ref.sum(-1, keepdims=True)
            rows.append((f"softmax(relu(x W1) W2) on {where}", float((out * np.arange(10)).sum()),
                         float(np.abs(out - ref).max()), (time.perf_counter() - t0) * 1e3))
        stats = rt.stats()
    return rows, stats


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--devices", default="sim:0,sim:1")
    p.add_argument("--size", type=int, default=256)
    args = p.parse_args()
    results = {mode: run(mode, args.devices, args.size) for mode in ("thread", "process")}
    ok = True
    for i, (what, *_) in enumerate(results["thread"][0]):
        line = f"{what:<36}"
        for mode, (rows, _) in results.items():
            _, value, error, ms = rows[i]
            if value is None:
                line += f" | {mode:>7} {ms:9.1f} ms{'':25}"
                continue
            good = error < 1e-3
            ok = ok and good
            line += f" | {value:+12.5f} err {error:.1e} {ms:7.2f} ms {'ok' if good else 'BAD'}"
        print(line)
    values = [[r[1] for r in rows] for rows, _ in results.values()]
    same = values[0] == values[1]
    print(f"operators: {results['thread'][1]['operators']} (thread), "
          f"{results['process'][1]['operators']} (process)")
    print("all results match NumPy" + (", the same in both modes" if same else
                                       "; THE MODES DIFFER") if ok else "RESULTS DIFFER FROM NUMPY")
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
