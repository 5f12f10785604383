"""Fixtures of the actorgraph package's tests: runtimes on sim devices, in each mode."""
import os

import pytest

import actorgraph as ag


def shm_entries():
    """This machine's shared-memory objects that actorgraph makes (ag-*)."""
    return {name for name in os.listdir("/dev/shm") if name.startswith("ag")}


@pytest.fixture(scope="module", params=["thread", "process"])
def rt(request):
    """A runtime on sim:0 and sim:1, in thread mode and in process mode."""
    with ag.Runtime(devices="sim:0,sim:1",
                    per_device_per_process=request.param == "process") as runtime:
        yield runtime


@pytest.fixture(scope="module")
def thread_rt():
    """A thread-mode runtime on sim:0 and sim:1."""
    with ag.Runtime(devices="sim:0,sim:1") as runtime:
        yield runtime
