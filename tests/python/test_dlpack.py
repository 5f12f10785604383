"""DLPack: NumPy reads an actorgraph cpu tensor in place, and a device tensor in place in thread
mode (a sim device's memory is the host's; CUDA tensors go to PyTorch where it is installed), and
actorgraph copies NumPy's (or any DLPack producer's) cpu tensors in, strided ones too, in both
modes."""
import os

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


def test_a_device_tensor_is_shared_in_place_in_thread_mode(thread_rt):
    t = thread_rt.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device="sim:1")
    u = (t * 2.0).T  # computed on the device; a view, made contiguous first
    assert u.__dlpack_device__() == (1, 0)  # a sim device's memory is the host's
    a = np.from_dlpack(u)
    np.testing.assert_array_equal(a, (np.arange(12, dtype=np.float32).reshape(3, 4) * 2).T)
    v = t + 1.0
    assert np.from_dlpack(v).ctypes.data == np.from_dlpack(v).ctypes.data  # the same memory


def test_shared_device_memory_outlives_its_runtime():
    with ag.Runtime(devices="sim:0") as rt:
        t = rt.uniform((4, 250), -1.0, 1.0, seed=3, device="sim:0")
        want = t.numpy()
        a = np.from_dlpack(t)
        del t
    np.testing.assert_array_equal(a, want)  # the runtime is closed; the lane's memory stays


def test_what_dlpack_cannot_carry_is_refused_naming_it(rt):
    t = rt.tensor([1.0], device="sim:0")
    if rt.per_device_per_process:
        with pytest.raises(ag.Error, match="sim:0 runs in a process of its own"):
            t.__dlpack__()
    with pytest.raises(TypeError, match="stream must be None or an int"):
        t.__dlpack__(stream="default")
    with pytest.raises(ValueError, match="stream 0 is not a stream"):
        t.__dlpack__(stream=0)
    with pytest.raises(TypeError, match="no actorgraph dtype"):
        rt.from_dlpack(np.zeros(2, dtype=np.float64))
    with pytest.raises(TypeError, match="has no __dlpack__"):
        rt.from_dlpack([1.0, 2.0])


def cuda_runtime_or_skip():
    """A thread-mode runtime on cuda:0, with PyTorch seeing a GPU; skipped where either lacks."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA GPU")
    try:
        return torch, ag.Runtime(devices="cuda:0")
    except ag.Error as e:
        pytest.skip(f"no cuda:0 here: {e}")


def test_pytorch_shares_a_cuda_tensor_on_its_stream():
    torch, rt = cuda_runtime_or_skip()
    with rt:
        a = rt.uniform((512, 512), -1.0, 1.0, seed=1, device="cuda:0")
        assert a.__dlpack_device__() == (2, torch.cuda.current_device())
        x = torch.from_dlpack(a)
        assert x.is_cuda and x.shape == (512, 512) and x.dtype == torch.float32
        assert torch.from_dlpack(a).data_ptr() == x.data_ptr()  # the same memory, not a copy
        np.testing.assert_array_equal(x.cpu().numpy(), a.numpy())
        # Work still running on the runtime's stream: PyTorch's stream waits for it.
        c = a
        for _ in range(20):
            c = ag.matmul(c, a) * 0.05
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            y = torch.from_dlpack(c) * 1.0  # on a stream of its own
        side.synchronize()
        np.testing.assert_allclose(y.cpu().numpy(), c.numpy(), rtol=0, atol=0)
        b = rt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cuda:0", dtype=ag.bfloat16)
        assert torch.from_dlpack(b).dtype == torch.bfloat16
        want = x.cpu().numpy()
    # The runtime closed: the memory PyTorch holds stays.
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    np.testing.assert_array_equal((x * 2).cpu().numpy(), want * 2)


def test_a_cuda_tensor_of_a_child_is_not_shared():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA GPU")
    with ag.Runtime(devices="cuda:0", per_device_per_process=True) as rt:
        with pytest.raises(ag.Error, match="cuda:0 runs in a process of its own"):
            torch.from_dlpack(rt.full((4,), 1.0, device="cuda:0"))
