"""block_swizzle's panel walk over row pairs (rasterize(..., pairs=True)): every block still
runs once, and blocks (x, 2i) and (x, 2i + 1), a thread-block cluster on the cuda backend, stay in
one column on consecutive rows."""

import pytest

pytest.importorskip("tvm")


@pytest.mark.parametrize("gx,gy,panel", [(4, 8, 2), (3, 10, 4), (16, 64, 16), (5, 6, 8)])
def test_row_pair_panels_are_a_permutation_that_keeps_pairs(gx, gy, panel):
    from tvm import tirx
    from tvm.sym import Analyzer

    from tilelang_core.simt.transform.block_swizzle import _panels
    from tilelang_core.simt.transform.state import substitute

    x, y = tirx.Var("x", "int32"), tirx.Var("y", "int32")
    new_x, new_half = _panels(x, gx, tirx.floordiv(y, 2), gy // 2, panel)
    new_y = new_half * 2 + tirx.floormod(y, 2)
    analyzer, moved = Analyzer(), {}
    for bx in range(gx):
        for by in range(gy):
            env = {x: tirx.const(bx, "int32"), y: tirx.const(by, "int32")}
            moved[(bx, by)] = tuple(int(analyzer.simplify(substitute(e, env))) for e in (new_x, new_y))
    assert sorted(moved.values()) == sorted(moved), "not a permutation of the blocks"
    for bx in range(gx):
        for by in range(0, gy, 2):
            (x0, y0), (x1, y1) = moved[(bx, by)], moved[(bx, by + 1)]
            assert x0 == x1 and y1 == y0 + 1 and y0 % 2 == 0
    if gy // 2 > panel:  # the walk really reorders
        assert any(moved[b] != b for b in moved)


@pytest.mark.parametrize("gx,gy,panel", [(4, 8, 3), (3, 10, 4), (8, 16, 10), (5, 6, 8), (1, 7, 2)])
def test_panels_are_a_permutation_inside_the_grid(gx, gy, panel):
    """The plain walk visits every block once, ragged last bands included: the ``min`` that tells
    bound analysis ``bx' < gx, by' < gy`` never changes a value."""
    from tvm import tirx
    from tvm.sym import Analyzer

    from tilelang_core.simt.transform.block_swizzle import _panels
    from tilelang_core.simt.transform.state import substitute

    x, y = tirx.Var("x", "int32"), tirx.Var("y", "int32")
    new = _panels(x, gx, y, gy, panel)
    analyzer = Analyzer()
    moved = [tuple(int(analyzer.simplify(substitute(e, {x: tirx.const(bx, "int32"), y: tirx.const(by, "int32")})))
                   for e in new) for bx in range(gx) for by in range(gy)]
    assert sorted(moved) == [(bx, by) for bx in range(gx) for by in range(gy)]
    analyzer.bind(x, tvm_range(0, gx))
    analyzer.bind(y, tvm_range(0, gy))
    assert analyzer.can_prove(tirx.all(new[0] >= 0, new[0] < gx, new[1] >= 0, new[1] < gy))


def tvm_range(lo, extent):
    import tvm

    return tvm.ir.Range.from_min_extent(lo, extent)
