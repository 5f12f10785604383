"""actorgraph: an actor-model runtime that drives several devices from one controller.

    import actorgraph as ag
    with ag.Runtime(devices="sim:0,sim:1") as rt:
        a = rt.tensor([[1.0, 2.0], [3.0, 4.0]], device="sim:0")
        print((a @ a + 1).numpy())

The names below are the C++ library's (include/actorgraph/), bound by the _actorgraph module.
"""
from ._actorgraph import *  # noqa: F401,F403
from ._actorgraph import __doc__ as _module_doc  # noqa: F401
from . import _actorgraph

__all__ = [name for name in dir(_actorgraph) if not name.startswith("_")]
