"""T.atomic_max / T.atomic_min of a tile into global memory: the MTE3 write unit in atomic
max/min mode (SetAtomicMax/Min), simulated across blocks and emitted."""

import pytest
import torch

import ascend_kernels as K
from ascend_harness import lower_program, simulate
from tilelang_ascend import isa
from tilelang_ascend.codegen import emit_ascend_c


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_atomic_max_and_min_combine_every_block_into_global_memory(kind, dtype):
    G, M, N = 3, 5, 40
    tdtype = getattr(torch, dtype)
    x = torch.randn(G * M, N, dtype=tdtype)
    start = torch.randn(M, N, dtype=tdtype)  # what Y held before: combined too, not overwritten
    y = start.clone()
    simulate(K.atomic_combine(kind, G, M, N, dtype), x, y)
    parts = torch.stack([start.float()] + [2 * x[g * M:(g + 1) * M].float() for g in range(G)])
    ref = parts.amax(0) if kind == "max" else parts.amin(0)
    assert torch.equal(y.float(), ref.to(tdtype).float())


def test_atomic_max_is_one_store_in_max_mode_and_emits_set_atomic_max():
    prog = lower_program(K.atomic_combine("max"))
    stores = [i for i in isa.instructions(prog.vec) if isinstance(i, isa.CopyUbToGm)]
    assert [s.atomic for s in stores] == ["max"]
    src = emit_ascend_c(prog)
    at = src.index("SetAtomicMax<float>();")
    assert src.index("DataCopyPad(Y_gm", at) < src.index("SetAtomicNone();", at)
