"""The rule table (tilelang_core.lowering), the generic LowerTileOps pass and its leftover check."""

from __future__ import annotations

import pytest
import tvm
from tvm import tirx

import tilelang_core.language as T
import tilelang_cpu.lowering  # noqa: F401  (registers the cpu rules)
from tilelang_core.errors import LoweringError
from tilelang_core.lowering import get_lowering, has_lowering, register_lowering, registered_ops
from tilelang_core.transform import LowerTileOps, lower_tile_ops, verify_no_tile_ops


def copy_kernel():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as _:
            s = T.alloc_shared((16,), "float32")
            T.copy(A, s)
            T.copy(s, B)

    return k


def test_cpu_backend_lowers_every_tile_op_of_the_contract():
    assert registered_ops("cpu") == ["atomic", "copy", "cumsum", "fill", "gemm", "reduce"]


def test_register_and_look_up_by_short_or_full_name():
    def rule(call, ctx):
        return tirx.Evaluate(0)

    register_lowering("copy", "test-backend-a")(rule)
    assert get_lowering("tl.tile.copy", "test-backend-a") is rule
    assert has_lowering("copy", "test-backend-a") and not has_lowering("gemm", "test-backend-a")


def test_registering_a_second_rule_for_the_same_op_is_an_error_unless_overridden():
    register_lowering("fill", "test-backend-b")(lambda call, ctx: tirx.Evaluate(0))
    with pytest.raises(LoweringError, match="already registered"):
        register_lowering("fill", "test-backend-b")(lambda call, ctx: tirx.Evaluate(1))
    replacement = register_lowering("fill", "test-backend-b", override=True)(lambda c, x: tirx.Evaluate(2))
    assert get_lowering("fill", "test-backend-b") is replacement


def test_missing_rule_names_op_backend_and_where_to_report():
    with pytest.raises(LoweringError) as info:
        get_lowering("gemm", "no-such-backend")
    message = str(info.value)
    assert "'gemm'" in message and "'no-such-backend'" in message and "tilelang-no-such-backend" in message


def test_lower_tile_ops_with_a_backend_lacking_rules_fails_naming_the_op_and_line():
    with pytest.raises(LoweringError, match="tile op 'copy'.*backend 'no-such-backend'") as info:
        lower_tile_ops(copy_kernel(), "no-such-backend")
    assert "in kernel 'k', " in str(info.value) and "test_cpu_lowering_registry.py:" in str(info.value)


def test_lower_tile_ops_replaces_every_call_and_verify_accepts_the_result():
    lowered = lower_tile_ops(copy_kernel(), "cpu")
    assert verify_no_tile_ops(lowered, "cpu") is lowered
    assert "tl_copy" not in lowered.script(show_meta=False)


def test_pass_form_runs_in_a_tvm_pipeline():
    mod = tvm.IRModule({"k": copy_kernel()})
    out = LowerTileOps("cpu")(mod)
    assert "tl_copy" not in out.script(show_meta=False)


def test_verify_no_tile_ops_names_the_leftover_op():
    with pytest.raises(LoweringError, match="tile op\\(s\\) copy are still present"):
        verify_no_tile_ops(copy_kernel(), "cpu")
