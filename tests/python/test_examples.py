"""The Python examples: train_digits.py gives ag-train's losses bit for bit, in both modes, and
demo.py runs."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("AG_BUILD_DIR", os.path.join(ROOT, "build"))
# python3-sklearn's digits (run.sh installs it), or AG_DIGITS where it is not installed.
DIGITS = os.environ.get("AG_DIGITS",
                        "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz")


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.parametrize("mode", ["thread", "process"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_train_digits_gives_ag_train_s_losses(mode, dtype):
    if not os.path.exists(DIGITS):
        pytest.skip(f"no digits at {DIGITS} (python3-sklearn's; or set AG_DIGITS)")
    args = ["--devices=sim:0,sim:1", f"--mode={mode}", f"--dtype={dtype}", "--epochs=3",
            f"--data={DIGITS}"]
    ours = run([sys.executable, os.path.join(ROOT, "apps/python/train_digits.py")] + args)
    theirs = run([os.path.join(BUILD, "apps/ag-train")] + args)
    lines = [l for l in ours.splitlines() if l.startswith("epoch")]
    assert len(lines) == 3
    assert lines == [l for l in theirs.splitlines() if l.startswith("epoch")]
    assert ours.splitlines()[-1].split(";")[0] == theirs.splitlines()[-1].split(";")[0]


def test_demo_matches_numpy_in_both_modes():
    out = run([sys.executable, os.path.join(ROOT, "apps/python/demo.py"), "--size=64"])
    assert "all results match NumPy, the same in both modes" in out


def test_bench_binding_runs_and_reports_both_modes(tmp_path):
    out = tmp_path / "binding.json"
    run([sys.executable, os.path.join(ROOT, "apps/python/bench_binding.py"), "--quick",
         f"--ag-bench={os.path.join(BUILD, 'apps/ag-bench')}", f"--json={out}"])
    import json
    rows = json.loads(out.read_text())["rows"]
    assert [r["mode"] for r in rows] == ["thread", "process"]
    import math
    assert all(r[k] > 0 for r in rows for k in r if k.endswith("_us") and "extra" not in k)
    assert all(math.isfinite(r["round_trip_extra_us"]) for r in rows)  # either sign: a difference
