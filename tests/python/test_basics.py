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


def described(obj):
    """True when obj's docstring says more than the signature pybind11 writes on its first line."""
    doc = getattr(obj, "__doc__", None) or ""
    if isinstance(obj, property) or isinstance(obj, type):
        return bool(doc.strip())
    return any(line.strip() for line in doc.split("\n")[1:])


def test_every_public_name_has_a_stub_and_a_docstring():
    import ast
    import os
    stubs = os.path.join(os.path.dirname(ag.__file__), "__init__.pyi")
    with open(stubs) as f:
        tree = ast.parse(f.read())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = set(ag.__all__)
    assert public - stubbed == set()
    undocumented = [name for name in public
                    if not isinstance(getattr(ag, name), ag.dtype) and not described(getattr(ag, name))]
    assert undocumented == []


def test_the_stubs_name_only_what_exists():
    import ast
    import os
    with open(os.path.join(os.path.dirname(ag.__file__), "__init__.pyi")) as f:
        tree = ast.parse(f.read())
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        real = getattr(ag, cls.name)
        for member in cls.body:
            if isinstance(member, ast.FunctionDef):
                assert hasattr(real, member.name), f"{cls.name}.{member.name}"
                if not member.name.startswith("__"):
                    assert described(getattr(real, member.name)), f"{cls.name}.{member.name}"
