"""ag.Tensor: making tensors from Python values, reading them back, views, reductions and the
Python operators, in both modes."""
import numpy as np
import pytest

import actorgraph as ag


@pytest.mark.parametrize("values, dtype, want", [
    ([[1.0, 2.0], [3.0, 4.0]], None, ag.float32),  # float64 becomes float32
    ([1, 2, 3], None, ag.int64),
    ([True, False], None, ag.uint8),
    (np.arange(6, dtype=np.int32).reshape(2, 3), None, ag.int32),
    (np.array([0.5, -2.0], dtype=np.float16), None, ag.float16),
    ([1.5, -2.25], ag.bfloat16, ag.bfloat16),
    (7.0, None, ag.float32),
])
def test_values_go_in_and_come_back_exactly(rt, values, dtype, want):
    t = rt.tensor(values, device="sim:1", dtype=dtype)
    assert t.dtype == want and t.device == "sim:1"
    expected = np.asarray(values)
    assert t.shape == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected.astype(t.numpy().dtype))


def test_bfloat16_reads_as_float32_or_as_its_bits(rt):
    t = rt.tensor([1.0, -2.0, 1.0 + 2 ** -9], device="sim:0", dtype="bfloat16")
    assert t.numpy().dtype == np.float32
    assert t.numpy().tolist() == [1.0, -2.0, 1.0]  # rounded to nearest even
    raw = t.numpy(raw=True)
    assert raw.dtype == np.uint16 and raw.tolist() == [0x3F80, 0xC000, 0x3F80]


def test_a_non_contiguous_array_goes_in_as_its_values(rt):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2].T
    np.testing.assert_array_equal(rt.tensor(a, device="sim:0").numpy(), a)


def test_empty_and_zero_d_tensors(rt):
    e = rt.tensor(np.zeros((0, 3), dtype=np.float32), device="sim:0")
    assert e.shape == (0, 3) and e.numpy().shape == (0, 3) and len(e) == 0
    s = rt.tensor(2.5, device="sim:0")
    assert s.shape == () and s.item() == 2.5 and float(s) == 2.5 and bool(s)
    with pytest.raises(TypeError, match="0-d"):
        len(s)
    with pytest.raises(ValueError, match="one element"):
        rt.tensor([1.0, 2.0]).item()


def test_python_operators_with_numbers_on_either_side(rt):
    x = np.array([[1.0, -2.0], [3.0, 0.5]], dtype=np.float32)
    a = rt.tensor(x, device="sim:0")
    cases = [(a + 1, x + 1), (1 - a, 1 - x), (a * 0.5, x * 0.5), (2 / a, 2 / x), (a / a, x / x),
             (-a, -x), (abs(a), abs(x)), (a ** 2, x ** 2), (a @ a, x @ x), (a - a.sum(), x - x.sum())]
    for got, want in cases:
        np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=1e-6)
    for got, want in [(a > 0, x > 0), (a == a, x == x), (a != 1, x != 1), (a <= 0.5, x <= 0.5),
                      (a < a * 2, x < x * 2), (a >= 3, x >= 3)]:
        assert got.dtype == ag.uint8
        np.testing.assert_array_equal(got.numpy(), want.astype(np.uint8))


def test_an_operator_with_something_else_is_a_type_error(rt):
    a = rt.tensor([1.0], device="sim:0")
    with pytest.raises(TypeError):
        a + "one"
    assert (a == None) is False  # noqa: E711 (Python's fallback: identity)


def test_views_and_copies(rt):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = rt.tensor(x, device="sim:1")
    np.testing.assert_array_equal(a.reshape(4, -1).numpy(), x.reshape(4, -1))
    np.testing.assert_array_equal(a.reshape((6, 4)).numpy(), x.reshape(6, 4))
    np.testing.assert_array_equal(a.transpose(0, 2).numpy(), x.transpose(2, 1, 0))
    np.testing.assert_array_equal(a.permute(2, 0, 1).numpy(), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(a.slice(2, 1, -1).numpy(), x[:, :, 1:-1])
    assert not a.transpose(0, 1).is_contiguous and a.transpose(0, 1).contiguous().is_contiguous
    np.testing.assert_array_equal(ag.cat([a, a], 1).numpy(), np.concatenate([x, x], 1))
    np.testing.assert_array_equal(a.to("cpu").numpy(), x)
    assert a.to("sim:0").device == "sim:0"
    np.testing.assert_array_equal(a.astype(ag.int32).numpy(), x.astype(np.int32))


def test_reductions_take_none_an_int_or_a_tuple(rt):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    a = rt.tensor(x, device="sim:0")
    np.testing.assert_allclose(a.sum().numpy(), x.sum())
    np.testing.assert_allclose(a.sum(dim=1).numpy(), x.sum(1))
    np.testing.assert_allclose(a.sum((0, 2), keepdim=True).numpy(), x.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(a.mean(-1).numpy(), x.mean(-1), rtol=1e-6)
    np.testing.assert_array_equal(a.max(1).numpy(), x.max(1))
    assert a.max().item() == x.max() and a.max(keepdim=True).shape == (1, 1, 1)
    np.testing.assert_array_equal(a.argmax(2).numpy(), x.argmax(2))
    assert a.argmax().item() == x.argmax()


def test_numpy_protocol_and_tolist(rt):
    a = rt.tensor([[1, 2], [3, 4]], device="sim:0", dtype=ag.int32)
    assert np.asarray(a).dtype == np.int32
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    assert a.tolist() == [[1, 2], [3, 4]]
    assert repr(a) == "int32[2,2] on sim:0" == str(a)
    assert len({a, a}) == 1  # hashable by identity, as torch.Tensor is


def test_factories(rt):
    f = rt.full((2, 3), 7, device="sim:0", dtype=ag.int64)
    assert f.numpy().tolist() == [[7] * 3] * 2
    u = rt.uniform((1000,), -1, 1, seed=3, device="sim:1")
    v = rt.uniform([1000], -1, 1, seed=3, device="cpu")
    np.testing.assert_array_equal(u.numpy(), v.numpy())  # the same bits on every device kind
    assert -1 <= u.numpy().min() and u.numpy().max() < 1
    n = rt.normal(4096, mean=2.0, std=0.5, seed=1, device="sim:0", dtype="bfloat16")
    assert n.dtype == ag.bfloat16 and abs(float(n.astype(ag.float32).mean()) - 2.0) < 0.05


def test_a_cpu_tensor_reads_in_place_read_only_and_outlives_its_runtime():
    import os
    mine = lambda: {n for n in os.listdir("/dev/shm") if n.startswith(f"ag-{os.getpid()}-")}  # noqa
    before = mine()
    rt = ag.Runtime(devices="sim:0", per_device_per_process=True)
    t = rt.tensor(np.arange(6, dtype=np.int64).reshape(2, 3))
    a, b = t.numpy(), np.asarray(t)
    assert a.ctypes.data == b.ctypes.data  # the store's bytes, not copies
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0, 0] = 1
    raw = rt.tensor([1.0, 2.0], dtype=ag.bfloat16)
    assert raw.numpy(raw=True).ctypes.data == raw.numpy(raw=True).ctypes.data
    rt.close()
    assert mine() <= before  # this runtime's names are gone, its store still mapped by `a`
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_indexing_with_ints_and_slices_gives_views_as_numpy_does(rt):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    a = rt.tensor(x, device="sim:0")
    for key in [0, -1, slice(1, None), (1, slice(0, 2)), (slice(None), 2), (0, 1, 2),
                (slice(-2, None), slice(None, -1), 3), slice(5, 9), (2, slice(3, 1))]:
        got = a[key]
        assert got.shape == x[key].shape, key
        np.testing.assert_array_equal(got.numpy(), x[key])
    np.testing.assert_array_equal(a[1].T.numpy(), x[1].T)
    with pytest.raises(IndexError, match="out of bounds for dimension 1"):
        a[0, 4]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0, 0]
    with pytest.raises(ValueError, match="step must be 1"):
        a[::2]
    with pytest.raises(TypeError, match="ints and slices"):
        a["0"]
    with pytest.raises(ValueError, match="2-D"):
        a.T
