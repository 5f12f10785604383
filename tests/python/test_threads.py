"""The binding lets other Python threads run while one waits, and tensors may be used from
several threads at once."""
import threading
import time

import numpy as np

import actorgraph as ag


def slow_result(rt):
    """A tensor that takes a second or more of a sim device's time to compute."""
    x = rt.uniform((512, 512), -1, 1, seed=1, device="sim:0")
    y = x
    for _ in range(30):
        y = (y @ x) * 0.04
    return y


def test_a_wait_lets_other_python_threads_run(thread_rt):
    y = slow_result(thread_rt)
    started, done = threading.Event(), threading.Event()

    def wait():
        started.set()
        y.numpy()
        done.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    started.wait()
    ticks = 0
    while not done.is_set():
        # Each tick needs the GIL again after its sleep: a wait holding the GIL would allow one.
        time.sleep(0.01)
        ticks += 1
    waiter.join()
    assert ticks >= 10, ticks


def test_sync_lets_other_python_threads_run(thread_rt):
    slow_result(thread_rt)
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (thread_rt.sync(), done.set()))
    waiter.start()
    ticks = 0
    while not done.is_set():
        time.sleep(0.01)
        ticks += 1
    waiter.join()
    assert ticks >= 10, ticks


def test_threads_submit_and_read_at_once(rt):
    results = {}

    def work(i):
        a = rt.tensor(np.full((64,), float(i), dtype=np.float32), device=f"sim:{i % 2}")
        for _ in range(50):
            a = a + 1
        results[i] = a.numpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        np.testing.assert_array_equal(results[i], np.full((64,), i + 50.0, dtype=np.float32))
