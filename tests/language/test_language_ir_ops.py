"""The tile-op definitions of tilelang_core.ir: registration, round trip, operand checks."""

import pytest
import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B

from tilelang_core.errors import FrontendError
from tilelang_core.ir import (Atomic, Copy, Cumsum, Fill, Gemm, GemmWarpPolicy, Reduce, TileOp,
                              get_op, is_tile_op, registered_ops)
from tilelang_core.ir import region as R


@pytest.fixture
def bufs():
    """Buffers of every scope, built inside a throwaway builder scope."""
    with IRBuilder():
        with B.prim_func():
            out = {
                "A": B.buffer((256, 64), "float16", buffer_name="A"),
                "As": B.buffer((128, 32), "float16", scope="shared.dyn", buffer_name="As"),
                "Bs": B.buffer((32, 64), "float16", scope="shared.dyn", buffer_name="Bs"),
                "Bt": B.buffer((64, 32), "float16", scope="shared.dyn", buffer_name="Bt"),
                "C": B.buffer((128, 64), "float32", scope="local.fragment", buffer_name="C"),
                "row": B.buffer((128,), "float32", scope="local.fragment", buffer_name="row"),
                "S3": B.buffer((2, 128, 32), "float16", scope="shared.dyn", buffer_name="S3"),
            }
    return out


def test_every_op_is_registered_as_tile_primitive():
    assert set(registered_ops()) == {"copy", "fill", "gemm", "reduce", "cumsum", "atomic", "tma_copy"}
    for name in registered_ops():
        op = get_op(name)
        assert str(op.name) == f"tl.tile.{name}"
        assert op.get_attr("TIRxOpCategory") == "tile_primitive"
    assert get_op("tl.tile.copy").same_as(get_op("copy"))


@pytest.mark.parametrize("make", [
    lambda b: Copy(b["A"][0:128, 0:32], b["As"]),
    lambda b: Fill(b["C"], 0.5),
    lambda b: Gemm(b["As"], b["Bs"], b["C"], policy=GemmWarpPolicy.FullRow, clear_accum=True),
    lambda b: Gemm(b["As"], b["Bt"], b["C"], transpose_B=True, k_pack=2),
    lambda b: Reduce(b["C"], b["row"], kind="absmax", dim=-1, clear=False),
    lambda b: Cumsum(b["C"], b["C"], dim=1, reverse=True),
    lambda b: Atomic(b["A"][0:128, 0:64], b["C"], kind="max"),
    lambda b: Atomic(b["A"][3, 4], tvm.tirx.const(1.0, "float16")),
])
def test_op_round_trips_through_its_stmt(bufs, make):
    op = make(bufs)
    stmt = op.to_stmt()
    assert is_tile_op(stmt)
    back = TileOp.from_stmt(stmt)
    assert type(back) is type(op)
    assert back.config() == op.config()
    tvm.ir.assert_structural_equal(back.to_stmt(), stmt)


def test_gemm_fields_and_config(bufs):
    op = TileOp.from_stmt(Gemm(bufs["As"], bufs["Bt"], bufs["C"], transpose_B=True,
                               policy="full_col").to_stmt())
    assert op.transpose_B and not op.transpose_A
    assert op.policy is GemmWarpPolicy.FullCol
    assert [R.as_int(x) for x in op.mnk] == [128, 64, 32]
    assert op.config() == {"transpose_A": False, "transpose_B": True, "policy": "full_col",
                           "clear_accum": False, "k_pack": 1, "wg_wait": 0}
    assert [R.name_of(r) for r in op.reads] == ["As", "Bt", "C"]
    assert [R.name_of(r) for r in op.writes] == ["C"]


def test_reduce_normalizes_negative_dim(bufs):
    assert Reduce(bufs["C"], bufs["row"], kind="sum", dim=-1).dim == 1


def test_global_regions_may_extend_past_the_tensor(bufs):
    op = Copy(bufs["A"][192:320, 0:32], bufs["As"])  # a ragged last tile
    assert [R.as_int(e) for e in R.extents_of(op.src)] == [128, 32]


def test_copy_ignores_unit_dims(bufs):
    op = Copy(bufs["S3"][1, 0:128, 0:32], bufs["As"])
    assert [R.as_int(e) for e in R.extents_of(op.src)] == [1, 128, 32]


def test_fill_casts_value_to_buffer_dtype(bufs):
    assert str(Fill(bufs["As"], 1).value.ty) == "float16"


@pytest.mark.parametrize("make, needle", [
    (lambda b: Copy(b["As"], b["Bs"]), "T.copy shape mismatch"),
    (lambda b: Gemm(b["As"], b["Bt"], b["C"]), "K of A is 32 but K of B is 64"),
    (lambda b: Gemm(b["As"], b["Bs"], b["As"]), "must be in 'local.fragment'"),
    (lambda b: Gemm(b["A"], b["Bs"], b["C"]), "operand A ('A') is in 'global'"),
    (lambda b: Gemm(b["As"], b["Bs"], b["C"], policy="diagonal"), "unknown gemm policy"),
    (lambda b: Reduce(b["C"], b["row"], kind="prod"), "unknown reduction kind"),
    (lambda b: Reduce(b["C"], b["row"], kind="max", dim=0), "T.reduce_max shape mismatch"),
    (lambda b: Reduce(b["C"], b["row"], kind="max", dim=2), "out of range"),
    (lambda b: Cumsum(b["C"], b["row"]), "T.cumsum shape mismatch"),
    (lambda b: Atomic(b["A"], b["C"], kind="nand"), "unknown atomic kind"),
    (lambda b: Atomic(b["A"][0:64, 0:64], b["C"]), "T.atomic_add shape mismatch"),
    (lambda b: Fill(b["C"], "zero"), "scalar expression"),
    (lambda b: Copy(b["A"][0:128, 0:32], b["S3"][1, 64:192, 0:32]), "out of bounds in dim 1"),
])
def test_invalid_operands_raise_frontend_error(bufs, make, needle):
    with pytest.raises(FrontendError, match=None) as info:
        make(bufs)
    assert needle in str(info.value)


def test_from_stmt_rejects_foreign_statements():
    with pytest.raises(TypeError, match="not a TileLang tile op"):
        TileOp.from_stmt(tvm.tirx.Evaluate(0))
