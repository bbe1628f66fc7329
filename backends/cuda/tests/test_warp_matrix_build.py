"""TileLang's hand-written MMA code (T.ptx_ldmatrix / T.ptx_mma, the TensorCoreIntrinEmitter of
tilelang_core/cuda/intrinsics) built with nvcc: the instructions it names are the ones in the SASS
(LDSM, HMMA / IMMA), the T.Parallel tile loads pipelined as cp.async (LDGSTS) on sm_80 and TMA
(UTMALDG) on sm_90a, and no local memory for the register tiles. Numerics: the interpreter
(test_warp_matrix_interpreted.py) and the GPU (gpu/test_gpu_warp_matrix.py)."""

import re
from collections import Counter

import pytest

pytest.importorskip("tilelang_cuda")

import emitter_kernels as ek  # noqa: E402
from test_language_fidelity_build import needs_nvcc  # noqa: E402

#: kernel, arch, {SASS op prefix: count at least}, ops that must not appear
CASES = {
    "fp16_sm80": (lambda: ek.emitter_gemm(256, 256, 256, warp_tiles=(64, 64)), "sm_80",
                  {"LDSM.16.M88.4": 8, "HMMA.16816.F32": 32, "LDGSTS": 1}, ("LDL", "STL")),
    "fp16_nn_sm90a": (lambda: ek.emitter_gemm(256, 256, 256, b_transposed=False), "sm_90a",
                      {"LDSM.16.M88.4": 2, "LDSM.16.MT88.4": 2, "HMMA.16816.F32": 8, "UTMALDG": 1}, ("LDL", "STL")),
    # the accumulator a fragment laid out by make_mma_store_layout, stored by T.copy: the same
    # registers (no local memory), the same HMMA
    "fp16_fragment_sm80": (lambda: ek.emitter_gemm(256, 256, 256, warp_tiles=(64, 64), c_fragment="copy"), "sm_80",
                           {"LDSM.16.M88.4": 8, "HMMA.16816.F32": 32, "LDGSTS": 1}, ("LDL", "STL")),
    "fp16_fragment_sm90a": (lambda: ek.emitter_gemm(256, 256, 256, warp_tiles=(64, 64), c_fragment="stmatrix"),
                            "sm_90a", {"HMMA.16816.F32": 32, "UTMALDG": 1}, ("LDL", "STL")),
    "int8_sm80": (lambda: ek.emitter_gemm(256, 256, 256, "int8", "int32", chunk=64), "sm_80",
                  {"LDSM.16.M88.4": 4, "IMMA.16832.S8.S8": 8}, ("LDL", "STL")),
    "one_mma_x1": (lambda: ek.one_mma("float16", num_b=1), "sm_80", {"LDSM.16.M88 ": 2, "LDSM.16.M88.4": 1,
                                                                      "HMMA.16816.F32": 1}, ()),
}


@needs_nvcc
@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_written_mma_builds_to_its_instructions(case, tmp_path):
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend
    from test_language_fidelity_build import Target

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    make, arch, wanted, banned = CASES[case]
    backend, options = CudaBackend(Target(arch)), CudaOptions(device_compiler="nvcc")
    source = backend.codegen(backend.lower(make(), options), options)
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    sass = compiler.sass(cubin)
    ops = Counter(re.findall(r"\b((?:LDSM|HMMA|IMMA|LDGSTS|UTMALDG|LDL|STL)[A-Z0-9_.]*)", sass))
    # (LDSM.16.M88 is the .x1 form; count it by its full name, its dot-suffixed kin separately)
    counts = {op: (len(re.findall(re.escape(op.strip()) + r"\s", sass)) if op.endswith(" ") else
                   sum(n for name, n in ops.items() if name.startswith(op))) for op in wanted}
    assert all(counts[op] >= n for op, n in wanted.items()), (counts, dict(ops))
    assert not any(name.startswith(banned) for name in ops) if banned else True, dict(ops)
