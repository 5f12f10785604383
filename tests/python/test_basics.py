"""dtypes, devices and errors of the actorgraph package."""
import numpy as np
import pytest

import actorgraph as ag


def test_dtypes_are_named_as_in_cpp_and_numpy():
    assert [str(t) for t in (ag.float32, ag.float16, ag.bfloat16, ag.int32, ag.int64, ag.uint8)] \
        == ["float32", "float16", "bfloat16", "int32", "int64", "uint8"]
    assert repr(ag.bfloat16) == "ag.bfloat16"
    assert ag.int64.itemsize == 8 and ag.bfloat16.itemsize == 2
    assert ag.float16.is_floating_point and not ag.uint8.is_floating_point


def test_every_spelling_of_a_dtype_is_taken(thread_rt):
    for spelling, want in [(ag.float16, ag.float16), ("half", ag.float16), ("bfloat16", ag.bfloat16),
                           (np.int32, ag.int32), (np.dtype("int64"), ag.int64), ("uint8", ag.uint8),
                           (np.float32, ag.float32), (bool, ag.uint8)]:
        assert thread_rt.full((2,), 1, dtype=spelling).dtype == want


def test_a_bad_dtype_names_itself(thread_rt):
    with pytest.raises(ValueError, match="float64 has no actorgraph dtype"):
        thread_rt.full((2,), 1, dtype=np.float64)
    with pytest.raises(ValueError, match="quad"):
        thread_rt.full((2,), 1, dtype="quad")
    with pytest.raises(TypeError, match="dtype must be"):
        thread_rt.full((2,), 1, dtype=object())


def test_devices_parse_as_in_cpp():
    assert ag.parse_devices("sim:0, sim:1") == ["sim:0", "sim:1"]
    assert ag.parse_devices("auto") == []
    with pytest.raises(ag.Error, match="sim:0"):
        ag.parse_devices("sim:0,sim:0")


def test_error_is_a_runtime_error_carrying_the_cpp_message(thread_rt):
    assert issubclass(ag.Error, RuntimeError)
    a = thread_rt.tensor([1.0, 2.0], device="sim:0")
    b = thread_rt.tensor([1.0, 2.0, 3.0], device="sim:0")
    with pytest.raises(ag.Error, match=r"add: shape mismatch .*float32\[2\] on sim:0.*float32\[3\]"):
        a + b


def test_a_bad_device_names_itself(thread_rt):
    with pytest.raises(ValueError, match="gpu:0"):
        thread_rt.tensor([1.0], device="gpu:0")
    with pytest.raises(TypeError, match="device must be"):
        thread_rt.tensor([1.0], device=0)
    with pytest.raises(ag.Error, match="sim:7"):
        thread_rt.tensor([1.0], device="sim:7")
