"""The binding lets other Python threads run while one waits, and tensors may be used from
several threads at once."""
import threading
import time

import numpy as np
import pytest

import actorgraph as ag


def slow_result(rt):
    """A tensor that takes a second or more of a sim device's time to compute (scaled to keep its
    values near 1: denormals would be slower)."""
    x = rt.uniform((512, 512), -1, 1, seed=1, device="sim:0")
    y = x
    for _ in range(30):
        y = (y @ x) * 0.077
    return y


def ticks_while(wait):
    """Runs wait() in another thread; counts this thread's ticks until it returns. Each tick needs
    the GIL again after its sleep: a wait holding the GIL would allow one."""
    started, done = threading.Event(), threading.Event()

    def run():
        started.set()
        wait()
        done.set()

    waiter = threading.Thread(target=run)
    waiter.start()
    started.wait()
    ticks = 0
    while not done.is_set():
        time.sleep(0.01)
        ticks += 1
    waiter.join()
    return ticks


def test_a_wait_lets_other_python_threads_run(thread_rt):
    y = slow_result(thread_rt)
    ticks = ticks_while(y.numpy)
    assert ticks >= 10, ticks


def test_sync_lets_other_python_threads_run(thread_rt):
    slow_result(thread_rt)
    ticks = ticks_while(thread_rt.sync)
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


def interrupted_after(seconds, wait):
    """Sends this process SIGINT (Ctrl-C) after `seconds`, from another thread, while this thread
    is in wait(), which must raise KeyboardInterrupt: the seconds from the signal to it."""
    import os
    import signal
    sent = []
    timer = threading.Timer(seconds, lambda: (sent.append(time.monotonic()),
                                              os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        wait()
    raised = time.monotonic()
    timer.join()
    return raised - sent[0]


def long_result(rt, steps=100):
    x = rt.uniform((512, 512), -1, 1, seed=2, device="sim:1")
    y = x
    for _ in range(steps):
        y = (y @ x) * 0.077
    return y


def test_ctrl_c_during_a_read_raises_keyboard_interrupt_and_the_runtime_goes_on(rt):
    y = long_result(rt)
    # Well before the work ends (seconds): the wait looks at signals every 50 ms.
    assert interrupted_after(0.2, y.numpy) < 1.0
    np.testing.assert_array_equal(y.numpy(), y.numpy())  # the same result, waited for again
    assert (rt.tensor([1.0, 2.0], device="sim:0") + 1).numpy().tolist() == [2.0, 3.0]


def test_ctrl_c_during_sync_raises_keyboard_interrupt(rt):
    long_result(rt)
    assert interrupted_after(0.2, rt.sync) < 1.0
    rt.sync()


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_ctrl_c_on_the_sockets_path_raises_keyboard_interrupt_and_the_runtime_goes_on(mode):
    # There the executor answers every wait; the thread receives its reply in slices.
    with ag.Runtime(devices="sim:0,sim:1", per_device_per_process=mode == "process",
                    transport="sockets") as rt:
        y = long_result(rt)
        assert interrupted_after(0.2, y.numpy) < 1.0
        assert interrupted_after(0.1, rt.sync) < 1.0
        rt.sync()
        np.testing.assert_array_equal(y.numpy(), y.numpy())
        assert (rt.tensor([1.0], device="sim:0") + 1).numpy().tolist() == [2.0]
