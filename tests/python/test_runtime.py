"""ag.Runtime: its options, its lifetime, and what it leaves behind."""
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import actorgraph as ag


def leftovers(pid):
    """Shared memory, runtime directories and ag-runner children of the runtimes of process pid."""
    tag = f"ag-{pid}-"
    tmp = os.environ.get("TMPDIR") or tempfile.gettempdir()
    found = [n for n in os.listdir("/dev/shm") if n.startswith(tag)]
    found += [n for n in os.listdir(tmp) if n.startswith(tag)]
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"ag-runner") for a in args) and any(tag.encode() in a for a in args):
            found.append(cmdline)
    return found


def test_options_are_taken_by_name_with_durations_in_seconds():
    with ag.Runtime(devices=["sim:0"], wait_timeout=5.5, start_timeout=float("inf"),
                    spin_wait=0.0001, max_in_flight_ops=64, transport="sockets",
                    store_bytes=1 << 22) as rt:
        assert rt.devices == ["sim:0"]
        assert "thread mode" in repr(rt)
        a = rt.tensor([1.0, 2.0], device="sim:0")
        assert (a + a).numpy().tolist() == [2.0, 4.0]


@pytest.mark.parametrize("options, error, words", [
    ({"bogus": 1}, TypeError, "unexpected keyword argument 'bogus'"),
    ({"wait_timeout": "5"}, TypeError, "wait_timeout must be a number of seconds"),
    ({"wait_timeout": -1}, ValueError, "wait_timeout must be 0 or more"),
    ({"store_bytes": 1.5}, TypeError, "store_bytes must be an int"),
    ({"per_device_per_process": 1}, TypeError, "per_device_per_process must be True or False"),
    ({"transport": "pigeons"}, ValueError, "transport must be"),
    ({"devices": "sim:0,sim:0"}, ValueError, "devices: .*sim:0"),
    ({"store_bytes": 16}, ag.Error, "store_bytes"),
    ({"cuda_graphs": "sometimes"}, ValueError, "cuda_graphs must be"),
    ({"cuda_graph_after": 0}, ag.Error, "cuda_graph_after 0"),
])
def test_a_bad_option_raises_naming_it(options, error, words):
    with pytest.raises(error, match=words):
        ag.Runtime(**options)


def test_a_closed_runtime_says_so_and_closing_again_does_nothing():
    rt = ag.Runtime(devices="sim:0")
    a = rt.tensor([1.0], device="sim:0")
    rt.close()
    assert rt.closed and repr(rt) == "<ag.Runtime closed>"
    rt.close()
    with pytest.raises(ag.Error, match="closed"):
        rt.sync()
    with pytest.raises(ag.Error):
        (a + a).numpy()


def test_stats_are_a_dict():
    with ag.Runtime(devices="sim:0") as rt:
        (rt.tensor([1.0], device="sim:0") * 2).numpy()
        rt.sync()
        s = rt.stats()
        assert set(s) == {"store_live_bytes", "device_live_bytes", "batches", "operators",
                          "in_flight_ops", "blocked_submits", "restarts"}
        assert s["operators"] >= 2 and s["in_flight_ops"] == 0


def test_a_process_mode_runtime_leaves_nothing_when_closed_or_collected():
    rt = ag.Runtime(devices="sim:0,sim:1", per_device_per_process=True)
    assert "process mode" in repr(rt)
    assert leftovers(os.getpid())
    rt.close()
    assert leftovers(os.getpid()) == []
    rt = ag.Runtime(devices="sim:0", per_device_per_process=True)
    (rt.tensor([1.0], device="sim:0") + 1).numpy()
    del rt
    assert leftovers(os.getpid()) == []


def run_python(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_runtime_alive_at_interpreter_exit_leaves_nothing():
    code = """
import os, actorgraph as ag
rt = ag.Runtime(devices="sim:0,sim:1", per_device_per_process=True)
t = rt.tensor([1.0, 2.0], device="sim:1") * 3
print(os.getpid(), t.numpy().tolist(), flush=True)
"""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0
    pid, _ = out.split(" ", 1)
    assert "[3.0, 6.0]" in out
    assert leftovers(int(pid)) == []


def test_a_forked_process_gets_a_clear_error_and_the_parent_goes_on():
    with ag.Runtime(devices="sim:0", per_device_per_process=True) as rt:
        a = rt.tensor([1.0, 2.0], device="sim:0")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: every use refused, naming both processes
            words = []
            for use in (lambda: a + a, a.numpy, rt.sync, lambda: rt.tensor([1.0])):
                try:
                    use()
                    words.append("used")
                except ag.Error as e:
                    words.append(str(e))
            rt.close()  # leaves the parent's runtime alone
            os.write(write, "\n".join(words).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            words = f.read().split("\n")
        os.waitpid(pid, 0)
        assert len(words) == 4
        for w in words:
            assert f"belongs to process {os.getpid()}" in w and f"process {pid} was forked" in w
        assert (a + a).numpy().tolist() == [2.0, 4.0]


def test_a_killed_child_raises_ag_error_naming_its_device():
    import signal
    import time
    with ag.Runtime(devices="sim:0,sim:1", per_device_per_process=True, wait_timeout=30.0) as rt:
        a = rt.tensor([1.0, 2.0], device="sim:1")
        assert (a + 1).numpy().tolist() == [2.0, 3.0]
        children = [int(c.split("/")[2]) for c in leftovers(os.getpid()) if c.startswith("/proc/")]
        assert len(children) == 2
        for pid in children:  # both children, sim:0's and sim:1's
            os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        with pytest.raises(ag.Error, match=r"sim:1"):
            (a * 2).numpy()
        assert time.monotonic() - t0 < 25.0  # found dead, not waited out
        cpu = rt.tensor([3.0])  # the controller's own cpu lane goes on
        assert (cpu + 1).numpy().tolist() == [4.0]



def test_a_device_whose_child_dies_comes_back_with_max_restarts():
    import signal
    import time
    with ag.Runtime(devices="sim:0", per_device_per_process=True, wait_timeout=30.0,
                    max_restarts=1) as rt:
        lost = rt.tensor([1.0, 2.0], device="sim:0")
        assert (lost + 1).numpy().tolist() == [2.0, 3.0]
        children = [int(c.split("/")[2]) for c in leftovers(os.getpid()) if c.startswith("/proc/")]
        assert len(children) == 1
        os.kill(children[0], signal.SIGKILL)
        deadline = time.monotonic() + 30.0
        while rt.stats()["restarts"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rt.stats()["restarts"] == 1
        with pytest.raises(ag.Error, match=r"lost when sim:0 was restarted"):
            lost.numpy()
        try:  # the failure is reported once, by a sync
            rt.sync()
        except ag.Error:
            pass
        again = rt.tensor([3.0, 4.0], device="sim:0")  # a new child runs it
        assert (again * 2).numpy().tolist() == [6.0, 8.0]

def test_marked_steps_give_the_results_of_unmarked_ones():
    results = []
    for graphs in ("auto", "off"):
        with ag.Runtime(["sim:0"], cuda_graphs=graphs, cuda_graph_after=1) as rt:
            x = rt.tensor(np.arange(64, dtype=np.float32), "sim:0")
            w = rt.full(64, 0.5, "sim:0")
            for _ in range(8):
                w = w * 0.9 + x * 0.01
                rt.mark_step()
            results.append(w.numpy())
    assert results[0].tobytes() == results[1].tobytes()

