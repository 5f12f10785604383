"""DLPack for cpu tensors: NumPy reads an actorgraph tensor in place, and actorgraph copies NumPy's
(or any DLPack producer's) cpu tensors in, strided ones too, in both modes."""
import numpy as np
import pytest

import actorgraph as ag


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.uint8])
def test_numpy_reads_a_cpu_tensor_in_place(rt, dtype):
    t = rt.tensor(np.arange(12).reshape(3, 4).astype(dtype))
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.dtype == dtype and a.shape == (3, 4)
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4).astype(dtype))
    assert a.ctypes.data == t.numpy().ctypes.data


def test_a_capsule_nobody_consumed_releases_its_tensor(rt):
    t = rt.tensor(np.ones(1000, dtype=np.float32))
    before = rt.stats()["store_live_bytes"]
    for _ in range(50):
        t.__dlpack__()  # dropped unconsumed: the capsule's deleter runs
    del t
    rt.sync()
    assert rt.stats()["store_live_bytes"] < before


@pytest.mark.parametrize("device", [None, "sim:1"])
def test_dlpack_producers_copy_in_strided_or_not(rt, device):
    x = np.arange(24, dtype=np.int64).reshape(4, 6)[::2, 1::2]
    t = rt.from_dlpack(x, device=device)
    assert t.dtype == ag.int64 and t.shape == (2, 3) and t.device == (device or "cpu")
    np.testing.assert_array_equal(t.numpy(), x)
    u = ag.from_dlpack(np.float16([0.5, -1.0]), rt)
    assert u.dtype == ag.float16 and u.numpy().tolist() == [0.5, -1.0]
    back = rt.from_dlpack(rt.tensor([1.0, 2.0], dtype=ag.bfloat16))
    assert back.dtype == ag.bfloat16 and back.numpy().tolist() == [1.0, 2.0]


def test_what_dlpack_cannot_carry_is_refused_naming_it(rt):
    with pytest.raises(BufferError, match="not on the cpu"):
        rt.tensor([1.0], device="sim:0").__dlpack__()
    with pytest.raises(TypeError, match="no actorgraph dtype"):
        rt.from_dlpack(np.zeros(2, dtype=np.float64))
    with pytest.raises(TypeError, match="has no __dlpack__"):
        rt.from_dlpack([1.0, 2.0])
