"""T.cumsum on the Vector core: VScan (row scans: CumSum; column scans: a chain of row Adds), a
reversed row scan composed from a forward one, through `tl.compile(target="ascend+sim")` against
torch.cumsum in float64 on ragged shapes; the simulator's reference, the checker and Ascend C."""

import numpy as np
import pytest
import torch

import tilelang_core as tl
from tilelang_core.errors import LoweringError

import ascend_kernels as K
from ascend_harness import lower_program
from tilelang_ascend import isa
from tilelang_ascend.checker import SyncCheckError, check_program
from tilelang_ascend.simulator import SimulatorError, simulate_program
from tilelang_ascend.codegen import emit_ascend_c


def reference(x: torch.Tensor, dim: int, reverse: bool) -> torch.Tensor:
    x = x.double()
    return x.flip(dim).cumsum(dim).flip(dim) if reverse else x.cumsum(dim)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("in_place", [False, True])
def test_cumsum_matches_torch_on_ragged_shapes(dim, reverse, in_place):
    M, N = (77, 40) if dim == 1 else (20, 77)  # 77 is ragged over blocks of 32
    kernel = tl.compile(K.cumsum(M, N, dim, reverse, in_place=in_place), out_idx=[-1],
                        target="ascend+sim")
    x = torch.randn(M, N, generator=torch.Generator().manual_seed(7 + dim + 2 * reverse))
    y = kernel(x)
    torch.testing.assert_close(y.double(), reference(x, dim, reverse), rtol=1e-5, atol=1e-5)


def test_cumsum_casts_float16_input_into_a_float32_scan():
    M, N = 45, 48
    kernel = tl.compile(K.cumsum(M, N, 1, dtype="float16", acc="float32"), out_idx=[-1],
                        target="ascend+sim")
    x = torch.randn(M, N, generator=torch.Generator().manual_seed(3)).half()
    torch.testing.assert_close(kernel(x).double(), reference(x, 1, False), rtol=1e-5, atol=1e-5)


def test_float16_scan_accumulates_in_float16_like_the_vector_unit():
    M, N = 16, 128
    prog = lower_program(K.cumsum(M, N, 1, dtype="float16", acc="float16", block=16))
    x = torch.full((M, N), 1.0 / 3).half()
    y = tl.compile(K.cumsum(M, N, 1, dtype="float16", acc="float16", block=16), out_idx=[-1],
                   target="ascend+sim")(x)
    scan = next(i for i in isa.instructions(prog.vec) if isinstance(i, isa.VScan))
    assert scan.dst.dtype == "float16"
    acc, chain = np.float16(0), []
    for _ in range(N):  # one float16 Add per step
        acc = np.float16(acc + np.float16(1.0 / 3))
        chain.append(acc)
    assert np.array_equal(y[0].numpy(), np.array(chain))
    assert (y[0].double() - reference(x, 1, False)[0]).abs().max() > 1e-2  # not float32 inside


def test_row_scans_use_one_vscan_and_column_scans_run_the_chain():
    row = lower_program(K.cumsum(40, 64, 1))
    col = lower_program(K.cumsum(64, 40, 0, reverse=True))
    (r,) = [i for i in isa.instructions(row.vec) if isinstance(i, isa.VScan)]
    (c,) = [i for i in isa.instructions(col.vec) if isinstance(i, isa.VScan)]
    assert (r.axis, r.reverse) == (1, False) and (c.axis, c.reverse) == (0, True)
    check_program(row)
    check_program(col)
    rsrc, csrc = emit_ascend_c(row), emit_ascend_c(col)
    assert "CumSum<float, TL_CUMSUM_LAST_AXIS>" in rsrc and "constexpr CumSumConfig" in rsrc
    assert "for (int32_t r = 62; r >= 0; --r) { PipeBarrier<PIPE_V>(); Add(" in csrc
    assert "CumSum<" not in csrc


def test_reversed_row_scan_is_composed_from_a_forward_scan():
    prog = lower_program(K.cumsum(40, 64, 1, reverse=True))
    kinds = [type(i).__name__ for i in isa.instructions(prog.vec) if isinstance(i, isa.VectorInstr)]
    assert kinds[-5:] == ["VScan", "VBinary", "VReduce", "VBroadcast", "VBinary"]
    tile = isa.Tile(isa.Buffer("b", "UB", "float32", 8, 8), 8, 8)
    with pytest.raises(ValueError, match="scans rows forward"):
        isa.VScan(tile, tile, 1, reverse=True)


def _without_wait_before_scan():
    prog = lower_program(K.cumsum(40, 64, 1))
    at = next(i for i, s in enumerate(prog.vec) if isinstance(s, isa.VScan))
    wait = max(i for i, s in enumerate(prog.vec[:at]) if isinstance(s, isa.WaitFlag) and s.dst == "V")
    del prog.vec[wait]
    return prog


def test_checker_and_simulator_catch_a_missing_wait_before_the_scan():
    check_program(lower_program(K.cumsum(40, 64, 1)))
    with pytest.raises(SyncCheckError):
        check_program(_without_wait_before_scan())
    prog = _without_wait_before_scan()
    x = np.zeros((40, 64), np.float32)
    with pytest.raises(SimulatorError, match="no covering wait"):
        simulate_program(prog, {"X": x, "Y": np.zeros_like(x)})


def test_scan_of_a_column_window_is_refused_with_what_to_do():
    with pytest.raises(LoweringError, match=r"whole UB rows(.|\n)*ascend_kernels.py:\d+"):
        lower_program(K.row_cumsum(window=True))
