"""A TileLangError raised inside a TVM pass reaches the caller as the same class."""

import pytest
import tvm
from tvm.script import tirx as TS

import tilelang_core.ir  # noqa: F401 - registers the error classes with tvm-ffi
from tilelang_core.errors import LayoutError, LoweringError


@TS.prim_func
def tiny(A: TS.Buffer((4,), "float32")):
    A[0] = 1.0


@pytest.mark.parametrize("cls", [LoweringError, LayoutError])
def test_error_type_and_message_cross_a_tvm_sequential(cls):
    @tvm.tirx.transform.prim_func_pass(opt_level=0)
    def failing(func, mod, ctx):
        raise cls("no lowering rule for 'copy' on backend 'acme'")

    with pytest.raises(cls, match="no lowering rule for 'copy' on backend 'acme'"):
        tvm.transform.Sequential([failing])(tvm.IRModule({"tiny": tiny}))


def test_our_errors_are_runtime_errors_as_tilelangs_are():
    """TileLang's errors are TVM's (RuntimeError subclasses); its tests and users catch those."""
    import tilelang_core.errors as E

    for cls in (E.TileLangError, E.FrontendError, E.LayoutError, E.LoweringError, E.CompileError, E.LaunchError):
        assert issubclass(cls, RuntimeError)
    with pytest.raises(RuntimeError, match="no lowering rule"):
        raise LoweringError("no lowering rule for 'copy'")
