"""The operators against NumPy on random shapes, broadcasts and values (hypothesis), in both
modes: float32 results within float rounding of NumPy's float64, exact where the operator is."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorgraph as ag

SETTINGS = settings(max_examples=25, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: the second drops leading dims and sets some sizes to 1."""
    a = draw(st.lists(st.integers(1, 4), min_size=0, max_size=4))
    drop = draw(st.integers(0, len(a)))
    b = [1 if draw(st.booleans()) else n for n in a[drop:]]
    return tuple(a), tuple(b)


def values(draw, shape, low=-4.0, high=4.0):
    n = int(np.prod(shape)) if shape else 1
    xs = draw(st.lists(st.floats(low, high, width=32), min_size=n, max_size=n))
    return np.array(xs, dtype=np.float32).reshape(shape)


@st.composite
def operands(draw):
    sa, sb = draw(broadcast_pair())
    if draw(st.booleans()):
        sa, sb = sb, sa
    return values(draw, sa), values(draw, sb)


BINARY = {
    "+": (lambda a, b: a + b, np.add),
    "-": (lambda a, b: a - b, np.subtract),
    "*": (lambda a, b: a * b, np.multiply),
    "maximum": (ag.maximum, np.maximum),
    "minimum": (ag.minimum, np.minimum),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(pair=operands())
def test_binary_operators_broadcast_as_numpy(rt, name, pair):
    x, y = pair
    ours, theirs = BINARY[name]
    got = ours(rt.tensor(x, device="sim:0"), rt.tensor(y, device="sim:0")).numpy()
    want = theirs(x.astype(np.float64), y.astype(np.float64))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@SETTINGS
@given(pair=operands())
def test_comparisons_and_where_broadcast_as_numpy(rt, pair):
    x, y = pair
    a, b = rt.tensor(x, device="sim:1"), rt.tensor(y, device="sim:1")
    for ours, theirs in [(ag.lt, np.less), (ag.ge, np.greater_equal), (ag.eq, np.equal)]:
        np.testing.assert_array_equal(ours(a, b).numpy(), theirs(x, y).astype(np.uint8))
    np.testing.assert_array_equal(ag.where(ag.gt(a, b), a, b).numpy(), np.where(x > y, x, y))


UNARY = {
    "exp": (ag.exp, np.exp, (-4, 4)),
    "log": (ag.log, np.log, (0.125, 8)),
    "sqrt": (ag.sqrt, np.sqrt, (0, 8)),
    "tanh": (ag.tanh, np.tanh, (-4, 4)),
    "sigmoid": (ag.sigmoid, lambda v: 1 / (1 + np.exp(-v)), (-8, 8)),
    "relu": (ag.relu, lambda v: np.maximum(v, 0), (-4, 4)),
    "abs": (ag.abs, np.abs, (-4, 4)),
    "neg": (ag.neg, np.negative, (-4, 4)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary_operators_match_numpy(rt, name, data):
    ours, theirs, (low, high) = UNARY[name]
    arr = values(data.draw, data.draw(shapes), low, high)
    got = ours(rt.tensor(arr, device="sim:0")).numpy()
    np.testing.assert_allclose(got, theirs(arr.astype(np.float64)), rtol=2e-6, atol=1e-6)


@SETTINGS
@given(data=st.data())
def test_reductions_and_softmax_match_numpy(rt, data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple))
    x = values(data.draw, shape)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    a = rt.tensor(x, device="sim:1")
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(a.sum(dim, keepdim=keepdim).numpy(),
                               x64.sum(dim, keepdims=keepdim), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(a.mean(dim).numpy(), x64.mean(dim), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(a.max(dim).numpy(), x.max(dim))
    np.testing.assert_array_equal(a.argmax(dim).numpy(), x.argmax(dim))
    e = np.exp(x64 - x64.max(dim, keepdims=True))
    np.testing.assert_allclose(ag.softmax(a, dim).numpy(), e / e.sum(dim, keepdims=True),
                               rtol=1e-5, atol=1e-6)


@SETTINGS
@given(data=st.data())
def test_matmul_matches_numpy_with_broadcast_batches(rt, data):
    m, k, n = (data.draw(st.integers(1, 6)) for _ in range(3))
    batch_a = data.draw(st.lists(st.integers(1, 3), max_size=2).map(tuple))
    batch_b = tuple(1 if data.draw(st.booleans()) else d for d in batch_a)
    x = values(data.draw, batch_a + (m, k))
    y = values(data.draw, batch_b + (k, n))
    got = (rt.tensor(x, device="sim:0") @ rt.tensor(y, device="sim:0")).numpy()
    np.testing.assert_allclose(got, np.matmul(x.astype(np.float64), y), rtol=1e-5, atol=1e-5)
