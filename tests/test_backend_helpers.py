"""Helpers every backend's stages share (tilelang_core.backend)."""

import pytest

from tilelang_core.backend import checked_arch, lower_each
from tilelang_core.errors import CompileError, LoweringError
from tilelang_core.target import Target


def test_checked_arch_takes_the_targets_arch_or_the_default():
    assert checked_arch(Target("cuda:sm_90a"), "cuda", ("sm_80", "sm_90a"), "sm_80") == "sm_90a"
    assert checked_arch(Target("cuda"), "cuda", ("sm_80", "sm_90a"), "sm_80") == "sm_80"


def test_checked_arch_refuses_an_unknown_arch_naming_the_known_ones():
    class Fake:
        arch = "sm_75"

    with pytest.raises(CompileError, match=r"cuda arch 'sm_75' is not supported; use one of sm_80, sm_90a"):
        checked_arch(Fake(), "cuda", ("sm_80", "sm_90a"), "sm_80")


def test_lower_each_lowers_every_primfunc_and_refuses_anything_else():
    import tvm
    from tvm.script import tirx as T

    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        T.func_attr({"global_symbol": "f"})
        A[0] = T.float32(1)

    seen = []
    mod = lower_each("test", f, lambda func: seen.append(func) or func)
    assert len(seen) == 1 and [g.name_hint for g in mod.get_global_vars()] == ["f"]

    bad = tvm.IRModule({"f": f, "g": tvm.relax.Function([], tvm.relax.Tuple([]))})
    with pytest.raises(LoweringError, match=r"the test backend lowers PrimFuncs only, got Function 'g'"):
        lower_each("test", bad, lambda func: func)
