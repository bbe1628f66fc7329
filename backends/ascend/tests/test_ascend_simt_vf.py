"""The dialect's vector functions: T.SimtVF runs non-SIMD T.Parallel bodies element by element on
the Vector core of dav-3510 (simulated, checked, emitted as a __simt_vf__ function); T.SimdVF
insists on SIMD; A2/A3 refuse SIMT."""

import re

import pytest
import torch

from tilelang_core.errors import LoweringError

import ascend_kernels as K
from ascend_harness import lower_program, rel_err, simulate
from tilelang_ascend import isa
from tilelang_ascend.codegen import emit_ascend_c
from tilelang_ascend.sim_artifact import dump_program, load_program
from tilelang_ascend.simt_vf import SimtLoop


def _reference(x, idx):
    y = x.double()[:, idx.long()] * 2.0
    shifted = torch.roll(x.double(), -1, dims=1)
    return torch.where(x < 0, y + shifted, y) + 1.0


def test_simt_region_runs_a_gather_and_a_data_dependent_if_on_the_simulator():
    M, N = 5, 40
    x, idx = torch.randn(M, N), torch.randperm(N, dtype=torch.int32)
    prog = lower_program(K.simt_gather(M, N))
    simt = [i for i in isa.instructions(prog.vec) if isinstance(i, SimtLoop)]
    assert len(simt) == 1 and simt[0].threads == 64 and simt[0].extents == [4, 40]
    assert {b.name for b in simt[0].bufs} == {"x", "idx", "y"} and [b.name for b in simt[0].written] == ["y"]
    y = simulate(None, x, idx, out_idx=[-1], program=prog)
    assert rel_err(y, _reference(x, idx)) < 1e-6


def test_simt_loop_is_ordered_after_the_copies_it_reads_and_before_the_vector_add():
    text = lower_program(K.simt_gather()).script()
    simt_at = text.index("SimtLoop(")
    assert text.rindex("WaitFlag(src='MTE2', dst='V'", 0, simt_at) < simt_at  # x, idx arrived
    assert "ld1=idx[j]; ld2=x[i, ld1]; y[i, j] = ld2 * T.float32(2.0)" in text
    assert text.index("VBinary(", simt_at) > simt_at  # the SimdVF add follows on the same pipe


def test_an_out_of_range_gather_index_is_a_simulator_error_with_the_buffer():
    x, idx = torch.randn(5, 40), torch.full((40,), 40, dtype=torch.int32)
    with pytest.raises(Exception, match=r"SIMT access x\[0, 40\] is outside the buffer \(4x40\)"):
        simulate(K.simt_gather(5, 40), x, idx, out_idx=[-1])


def test_simt_function_is_emitted_and_called_with_ub_addresses():
    src = emit_ascend_c(lower_program(K.simt_gather()))
    head = re.search(r"__simt_vf__ __launch_bounds__\(64\) inline void main_simt_vf0\((.*)\) \{", src)
    assert head and set(head.group(1).split(", ")) == {
        "__ubuf__ float *x", "__ubuf__ int32_t *idx", "__ubuf__ float *y"}
    assert "const float ld2 = x[(i) * 40 + (ld1)];" in src  # the gather reads through the index
    assert "for (int32_t tl_e = threadIdx.x; tl_e < 160; tl_e += blockDim.x)" in src
    assert "const int32_t ld" in src and "if (" in src
    vec = src[src.index("if ASCEND_IS_AIV"):]
    assert "asc_vf_call<main_simt_vf0>(dim3(64), " in vec


def test_simt_program_survives_the_jit_artifact():
    prog = lower_program(K.simt_gather())
    back = load_program(dump_program(prog))
    x, idx = torch.randn(5, 40), torch.randperm(40, dtype=torch.int32)
    assert rel_err(simulate(None, x, idx, out_idx=[-1], program=back), _reference(x, idx)) < 1e-6


def test_a2_a3_refuse_simt_and_say_why():
    with pytest.raises(LoweringError, match=r"dav-c220 run SIMD only.*dav-3510"):
        lower_program(K.simt_gather(), arch="dav-c220")


def test_simd_region_refuses_a_body_that_cannot_be_simd():
    with pytest.raises(LoweringError, match=r"cannot become SIMD(.|\n)*ascend_kernels.py:\d+"):
        lower_program(K.simd_region_with_a_gather())


def test_outside_a_region_the_not_simd_error_points_to_simt_vf():
    with pytest.raises(LoweringError, match=r"cannot become SIMD.*T\.SimtVF\(threads=128\)"):
        lower_program(K.shifted_index())
    with pytest.raises(LoweringError, match=r"cannot become SIMD.*dav-c220\) Vector cores run SIMD only"):
        lower_program(K.shifted_index(), arch="dav-c220")
