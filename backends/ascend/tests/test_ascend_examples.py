"""Every example kernel the Ascend backend lowers, run on the simulator against torch (float64),
with sizes that do not divide the tiles (ragged edges), on both archs."""

import pytest
import torch

from ascend_harness import example, lower_program, rel_err, simulate


@pytest.mark.parametrize("trans_A, trans_B", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_with_transposes_matches_torch(trans_A, trans_B):
    gemm = example("gemm/gemm.py")
    M, N, K = 130, 72, 100
    a = torch.randn(*((K, M) if trans_A else (M, K)), dtype=torch.float16)
    b = torch.randn(*((N, K) if trans_B else (K, N)), dtype=torch.float16)
    c = simulate(gemm.gemm.get_tir(M, N, K, trans_A, trans_B), a, b, out_idx=[-1])
    assert rel_err(c, gemm.reference(a, b, trans_A, trans_B)) < 1e-3


@pytest.mark.parametrize("arch", ["dav-3510", "dav-c220"])
def test_gemm_bfloat16_on_both_archs(arch):
    gemm = example("gemm/gemm.py")
    a, b = torch.randn(67, 45, dtype=torch.bfloat16), torch.randn(45, 33, dtype=torch.bfloat16)
    func = gemm.gemm.get_tir(67, 33, 45, dtype="bfloat16", block_M=32, block_N=16, block_K=16)
    c = simulate(func, a, b, out_idx=[-1], arch=arch)
    assert rel_err(c, gemm.reference(a, b, False, False)) < 8e-3


def test_gemm_k_tile_larger_than_l0a_is_split_into_k_steps():
    gemm = example("gemm/gemm.py")
    func = gemm.gemm.get_tir(130, 64, 600, block_M=128, block_N=64, block_K=512)
    prog = lower_program(func)
    text = prog.script()
    assert text.count("Mmad(") == 2 and "k=256" in text  # 128x512 half = 128 KiB > 64 KiB L0A
    a, b = torch.randn(130, 600, dtype=torch.float16), torch.randn(600, 64, dtype=torch.float16)
    c = simulate(None, a, b, out_idx=[-1], program=prog)
    assert rel_err(c, gemm.reference(a, b, False, False)) < 1e-3


@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3), (torch.float32, 1e-6)])
def test_softmax_matches_torch(dtype, tol):
    softmax = example("softmax/softmax.py")
    x = torch.randn(37, 100, dtype=dtype) * 3
    y = simulate(softmax.softmax.get_tir(37, 100, dtype=str(dtype).split(".")[-1]), x, out_idx=[-1])
    assert rel_err(y, torch.softmax(x.double(), dim=1)) < tol


@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3), (torch.float32, 1e-6)])
def test_rms_norm_matches_torch(dtype, tol):
    rms = example("norm/rms_norm.py")
    x, w = torch.randn(19, 72, dtype=dtype), torch.rand(72, dtype=dtype) + 0.5
    y = simulate(rms.rms_norm.get_tir(19, 72, dtype=str(dtype).split(".")[-1]), x, w, out_idx=[-1])
    assert rel_err(y, rms.reference(x, w)) < tol


def test_layer_norm_matches_torch():
    ln = example("norm/layer_norm.py")
    x = torch.randn(19, 72, dtype=torch.float16)
    w, b = torch.rand(72, dtype=torch.float16) + 0.5, torch.randn(72, dtype=torch.float16)
    y = simulate(ln.layer_norm.get_tir(19, 72), x, w, b, out_idx=[-1])
    ref = torch.nn.functional.layer_norm(x.double(), (72,), w.double(), b.double(), eps=1e-5)
    assert rel_err(y, ref) < 1e-3


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention_forward_matches_torch(is_causal):
    fa = example("attention/flash_attention.py")
    q, k, v = (torch.randn(1, 100, 2, 32, dtype=torch.float16) for _ in range(3))
    func = fa.flash_attention.get_tir(1, 2, 100, 32, is_causal, block_M=32, block_N=32)
    o = simulate(func, q, k, v, out_idx=[3])
    assert rel_err(o, fa.reference(q, k, v, is_causal)) < 2e-3


def test_flash_attention_with_unequal_tiles_on_a2():
    fa = example("attention/flash_attention.py")
    q, k, v = (torch.randn(2, 77, 1, 16, dtype=torch.float16) for _ in range(3))
    func = fa.flash_attention.get_tir(2, 1, 77, 16, True, block_M=16, block_N=32)
    o = simulate(func, q, k, v, out_idx=[3], arch="dav-c220")
    assert rel_err(o, fa.reference(q, k, v, True)) < 2e-3


def test_split_k_gemm_accumulates_partial_products_with_gm_atomic_add():
    splitk = example("gemm/gemm_splitk.py")
    prog = lower_program(splitk.gemm_splitk.get_tir(100, 70, 300, split_k=3))
    fix = [i for i in __import__("tilelang_ascend.isa", fromlist=["x"]).instructions(prog.cube)
           if type(i).__name__ == "Fixpipe"]
    assert [f.atomic for f in fix] == ["add"] and prog.vec == []  # C_local never leaves L0C early
    a, b = torch.randn(100, 300, dtype=torch.float16), torch.randn(300, 70, dtype=torch.float16)
    c = torch.zeros(100, 70, dtype=torch.float32)
    simulate(None, a, b, c, program=prog)
    assert rel_err(c, a.double() @ b.double()) < 1e-5


def test_quickstart_gemm_relu_accumulates_in_l0c_then_moves_to_ub_once():
    quickstart = example("quickstart.py")
    a, b = torch.randn(70, 50, dtype=torch.float16), torch.randn(50, 40, dtype=torch.float16)
    spec = quickstart.matmul_relu.program.specialize((a, b), {})
    prog = lower_program(spec.func)
    mmads = [i for i in __import__("tilelang_ascend.isa", fromlist=["x"]).instructions(prog.cube)
             if type(i).__name__ == "Mmad"]
    assert mmads[0].c.buf.mem == "L0C" and str(mmads[0].init) == "ko == 0"
    assert len(prog.workspaces) == 1  # one L0C -> UB move for the ReLU epilogue
    c = simulate(None, a, b, out_idx=spec.out_idx, program=prog)
    assert rel_err(c, quickstart.reference(a, b)) < 1e-3


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-6), (torch.float16, 1e-3)])
def test_elementwise_scale_add_stages_global_tiles_through_ub(dtype, tol):
    scale_add = example("elementwise/scale_add.py")
    a, b = torch.randn(33, 130, dtype=dtype), torch.randn(33, 130, dtype=dtype)
    func = scale_add.scale_add.get_tir(33, 130, 0.75, dtype=str(dtype).split(".")[-1])
    c = simulate(func, a, b, out_idx=[-1])
    assert rel_err(c, 0.75 * a.double() + b.double()) < tol
