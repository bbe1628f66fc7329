"""CUDA codegen compiled by the real nvcc (no GPU needed): cubins for sm_80 and sm_90a, the SASS
instructions meant, a .so loadable with tvm-ffi alone, and compile-time errors that say what to do.

nvcc costs about a second per call: artifacts are built once per module and shared.
"""

import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from tilelang_core.errors import CompileError, LoweringError

import kernels

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None and not __import__("os").path.exists(
    "/usr/local/cuda/bin/nvcc"), reason="nvcc (CUDA toolkit) is not installed")


class Target:
    def __init__(self, arch):
        self.arch = arch


def compile_kernel(func, arch, workdir, **options):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend = CudaBackend(Target(arch))
    opts = CudaOptions(**options)
    mod = backend.lower(func, opts)
    source = backend.codegen(mod, opts)
    backend.build(mod, source, opts, workdir)
    return backend, source


@pytest.fixture(scope="module")
def gemm_builds(tmp_path_factory):
    out = {}
    for arch in ("sm_80", "sm_90a"):
        workdir = tmp_path_factory.mktemp(f"gemm_{arch}")
        backend, source = compile_kernel(kernels.make_gemm(1000, 1000, 1000), arch, workdir)
        out[arch] = (backend, source, workdir)
    return out


def sass_counts(cubin) -> Counter:
    from tilelang_cuda import compiler

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    return Counter(re.findall(r"\b(HMMA|HGMMA|LDSM|LDGSTS|UTMALDG|LDL|STL|BAR)\b", compiler.sass(cubin)))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_gemm_compiles_to_a_cubin_and_a_library(gemm_builds, arch):
    backend, source, workdir = gemm_builds[arch]
    # mma.sync on sm_80, wgmma on sm_90a (helpers are in a kernel's source only where it calls them)
    assert ("tl_mma_m16n8k16_f16_f32(" if arch == "sm_80" else "tl_wgmma") in source and "__tvm_ffi_gemm" in source
    assert arch == "sm_80" or "tl_mma_m16n8k16_f16_f32" not in source
    assert (workdir / "kernel.cubin").stat().st_size > 0
    assert (workdir / "kernel.so").stat().st_size > 0
    assert backend.timings["build_total"] < 30


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_gemm_sass_uses_tensor_cores_ldmatrix_and_async_copies(gemm_builds, arch):
    """128x128x32 tiles: mma.sync fed by ldmatrix and cp.async on sm_80; wgmma fed by TMA on sm_90a
    (block_K = 32: the 64-byte swizzle)."""
    _, _, workdir = gemm_builds[arch]
    counts = sass_counts(workdir / "kernel.cubin")
    if arch == "sm_80":
        assert counts["HMMA"] >= 64  # 2 k-steps x 4 x 8 mma per warp per K tile
        assert counts["LDSM"] >= 16
        assert counts["LDGSTS"] >= 8
    else:
        assert counts["HGMMA"] >= 4 and counts["UTMALDG"] >= 2 and counts["HMMA"] == 0
    assert counts["LDL"] == 0 and counts["STL"] == 0, "register arrays spilled to local memory"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype,acc,mma,count", [("int8", "int32", "IMMA.16832.S8.S8", 32),
                                                 ("float32", "float32", "HMMA.1688.F32.TF32", 128)])
@pytest.mark.parametrize("trans_b", [True, False])
def test_int8_and_float32_gemms_run_on_tensor_cores(tmp_path, arch, dtype, acc, mma, count, trans_b):
    """128x128x32 tiles on 4 warps (64x64 each): int8 is one m16n8k32 step of 4 x 8 instructions,
    tf32 four m16n8k8 steps; on sm_90a too (wgmma takes fp16/bf16 only). ldmatrix feeds K-major
    operands (B stored N x K); B stored K x N comes through plain shared loads."""
    from tilelang_cuda import compiler

    func = kernels.make_gemm(1000, 1000, 1000, dtype=dtype, out_dtype=acc, accum_dtype=acc, trans_b=trans_b)
    backend, _ = compile_kernel(func, arch, tmp_path, ptxas_verbose=True)
    assert "0 bytes spill stores" in backend.last_build.log
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    sass = compiler.sass(tmp_path / "kernel.cubin")
    instructions = Counter(re.findall(r"\b([HI]MMA\.[\w.]+|HGMMA|LDSM|LDGSTS|LDL|STL)\b", sass))
    assert instructions[mma] == count and sum(n for op, n in instructions.items() if "MMA" in op) == count, \
        dict(instructions)
    steps = count // 32  # k-steps of 4 x 8 instructions per warp; each loads 4 A and (4 B) x4 matrices
    assert instructions["LDSM"] >= (8 if trans_b else 4) * steps and instructions["LDGSTS"] > 0, dict(instructions)
    assert instructions["LDL"] == 0 and instructions["STL"] == 0, dict(instructions)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("tiles,width", [(dict(bm=128, bn=256, bk=64, threads=256, stages=3), 256),
                                         (dict(bm=128, bn=128, bk=32, threads=128, stages=2), 128)])
def test_fp16_accumulators_run_on_tensor_cores(tmp_path, arch, tiles, width):
    """fp16 operands into an fp16 accumulator: mma.sync's and wgmma's .f16 forms (both were the
    scalar FMA path, whose kernels also took nvcc a minute or more), the accumulator two elements to
    a register; bf16 operands have no fp16-accumulating instruction and stay off the tensor cores."""
    from tilelang_cuda import compiler

    func = kernels.make_gemm(1000, 520, 264, accum_dtype="float16", **tiles)
    backend, source = compile_kernel(func, arch, tmp_path, ptxas_verbose=True)
    if arch == "sm_80":
        assert "tl_mma_m16n8k16_f16_f16(" in source and ".f16.f16.f16.f16" in source
    else:
        assert f"m64n{width}k16.f16.f16.f16" in source and f"tl_wgmma_ss_f16_n{width}_f16acc<" in source
    assert "0 bytes spill stores" in backend.last_build.log
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    sass = compiler.sass(tmp_path / "kernel.cubin")
    instructions = Counter(re.findall(r"\b(HGMMA\.[\w.]+|HMMA\.[\w.]+|LDL|STL)\b", sass))
    if arch == "sm_80":  # 8 warps x 64x32 (or 4 x 64x64) per warp: 32 mma per k16 step
        assert instructions["HMMA.16816.F16"] >= 32 and len(instructions) == 1, dict(instructions)
    else:
        assert instructions[f"HGMMA.64x{width}x16.F16"] >= 4 and len(instructions) == 1, dict(instructions)
    # (generated source only: that scalar-FMA kernel takes nvcc over a minute)
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    bf16 = kernels.make_gemm(1000, 520, 264, dtype="bfloat16", out_dtype="bfloat16", accum_dtype="float16", **tiles)
    backend, opts = CudaBackend(Target(arch)), CudaOptions()
    source = backend.codegen(backend.lower(bf16, opts), opts)
    assert "tl_wgmma" not in source[source.find('extern "C" __global__'):] and "tl_mma_" not in source
    assert arch == "sm_80" or "bfloat16/bfloat16 with a float16 accumulator" in source


def test_fma_path_runs_one_k_loop_over_all_of_a_threads_elements(tmp_path):
    """The FMA path (exact fp32 here) with k outermost: one k loop whose body updates the thread's 128
    elements, B's value (the thread's column of the spread layout) read once per k for all of them.
    One k loop per element, as before, read both operands per multiply-add and cost nvcc over a
    minute for bf16 operands into fp16."""
    from tilelang_cuda import compiler

    func = kernels.make_gemm(512, 512, 256, bm=128, bn=128, bk=32, stages=2, dtype="float32", out_dtype="float32",
                             accum_dtype="float32")
    _, source = compile_kernel(func, "sm_80", tmp_path, disable_tf32=True)
    body = source[source.find('extern "C" __global__'):]
    assert "tl_mma" not in body and len(re.findall(r"for \(int k_?\d* = 0; k_?\d* < 32;", body)) == 1, body[:3000]
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    sass = Counter(re.findall(r"\b(FFMA|LDS[.\w]*|LDL|STL)\b", compiler.sass(tmp_path / "kernel.cubin")))
    loads = sum(n for op, n in sass.items() if op.startswith("LDS"))
    assert sass["FFMA"] >= 128 and loads <= sass["FFMA"] + 8 and not sass["LDL"] and not sass["STL"], dict(sass)


def test_library_loads_with_tvm_ffi_alone(gemm_builds):
    """A fresh interpreter that never imports tvm loads the .so and finds the entry function."""
    _, _, workdir = gemm_builds["sm_90a"]
    code = ("import sys, tvm_ffi\n"
            f"m = tvm_ffi.load_module({str(workdir / 'kernel.so')!r})\n"
            "assert m['gemm'] is not None\n"
            "assert 'tvm' not in sys.modules, 'tvm was imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_reduction_kernel_compiles_with_warp_shuffles(tmp_path):
    _, source = compile_kernel(kernels.make_row_max(256, 64), "sm_80", tmp_path)
    assert "tl_shfl_xor" in source


def test_fp8_on_sm80_is_a_clear_error(tmp_path):
    with pytest.raises(LoweringError, match="float8_e4m3fn, which sm_80 does not support.*sm_89"):
        compile_kernel(kernels.make_fp8_copy(256), "sm_80", tmp_path)


def test_shared_memory_over_the_arch_limit_is_a_clear_error(tmp_path):
    big = kernels.make_gemm(1024, 1024, 1024, bm=256, bn=256, bk=64, stages=4)
    with pytest.raises(LoweringError, match="shared memory.*sm_86 allows"):
        compile_kernel(big, "sm_86", tmp_path)


def test_nvcc_failure_carries_the_command_and_log(tmp_path):
    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions

    with pytest.raises(CompileError) as info:
        compiler.compile_cubin("this is not cuda;", "sm_80", tmp_path, CudaOptions())
    assert info.value.command and "nvcc" in info.value.command[0]
    assert "error" in info.value.log


def test_jit_compiles_and_loads_through_the_backend(tmp_path, monkeypatch):
    """The driver's path (tl.compile with this backend): stages, artifact, load, entry function."""
    import tilelang_core as tl
    from tilelang_core.target import resolve_target
    from tilelang_cuda.pipeline import CudaBackend

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    target = resolve_target({"kind": "cuda", "arch": "sm_80"})
    kernel = tl.compile(kernels.make_gemm(256, 256, 64), target=target, _backend=CudaBackend(target))
    assert "tl_mma_m16n8k16" in kernel.asm["source"]
    assert "tl_ldmatrix_x4" in kernel.asm["lowered"]
    # TileLang's kernel_only: the device code, without the tvm-ffi host wrapper after it
    device = kernel.get_kernel_source(kernel_only=True)
    assert kernel.get_kernel_source(kernel_only=False) == kernel.asm["source"] and kernel.asm["source"].startswith(device)
    assert kernel.get_kernel_source() + kernel.get_host_source() == kernel.asm["source"]
    assert "__global__" in device and "tl_mma_m16n8k16" in device
    assert "#include <tvm/ffi/c_api.h>" not in device and "TVM_FFI_SAFE_CALL" not in device


def test_wrapper_tests_alignment_so_the_launcher_does_not(tmp_path, monkeypatch):
    """The tvm-ffi wrapper refuses a data pointer less aligned than the kernel assumes (one test
    per tensor, after TVM's NULL test, before any launch); the JIT's launcher then does no
    data_ptr() test of its own per call (a refused call goes through the slow path, which stages
    a misaligned view: tests/gpu/test_gpu_launch_checks.py)."""
    import tilelang_core as tl
    from tilelang_core.target import resolve_target
    from tilelang_cuda.pipeline import CudaBackend

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    target = resolve_target({"kind": "cuda", "arch": "sm_90a"})
    kernel = tl.compile(kernels.make_gemm(256, 256, 64), target=target, _backend=CudaBackend(target))
    host = kernel.asm["source"][kernel.asm["source"].find("#include <tvm/ffi/c_api.h>"):]
    for name in ("A", "B", "C"):
        test = f"if (((uintptr_t)(((DLTensor*){name}_handle)[0].data)) % 64) {{"
        assert host.index(f"(((DLTensor*){name}_handle)[0].data)) == NULL") < host.index(test)
    assert host.rindex("% 64) {") < host.index("tvm_cuda_host_launch(::")  # all before the launch
    assert "data_ptr()" not in kernel._launch.__source__
    # dynamic extents: TVM's test reads `m * 128 == 0 || data != NULL`; the alignment test follows it too
    dynamic = tl.compile(kernels.make_dynamic_gemm(), target=target, _backend=CudaBackend(target)).asm["source"]
    for name in ("A", "B", "C"):
        assert f"if (((uintptr_t)(((DLTensor*){name}_handle)[0].data)) % 64) {{" in dynamic


@pytest.mark.parametrize("make,args", [(kernels.make_softmax, (100, 64)),
                                       (kernels.make_atomic_rowsum, (96, 64)),
                                       (kernels.make_shared_add, (70, 100)),
                                       (kernels.make_dynamic_gemm, ()),
                                       (lambda: kernels.make_gemm(256, 256, 64, bm=64, bn=64, bk=16,
                                                                  dtype="float32",
                                                                  out_dtype="float32"), ())])
def test_other_kernels_compile_for_sm80(tmp_path, make, args):
    backend, _ = compile_kernel(make(*args), "sm_80", tmp_path)
    assert (tmp_path / "kernel.so").is_file()


@pytest.mark.parametrize("schedule,meant", [
    ({}, {"HGMMA": 12, "UTMALDG": 4}),  # sm_90a default: wgmma fed by a TMA producer warpgroup
    ({"disable_warp_specialized": True}, {"HGMMA": 12, "LDGSTS": 1}),  # wgmma + cp.async pipeline
    ({"disable_wgmma": True, "disable_warp_specialized": True}, {"HMMA": 128, "LDSM": 1, "LDGSTS": 1}),
])
def test_flash_attention_compiles_without_spills(tmp_path, schedule, meant):
    backend, _ = compile_kernel(kernels.make_flash_attention(2, 4, 1000, 128, 128, 64, 256),
                                "sm_90a", tmp_path, ptxas_verbose=True, **schedule)
    assert "0 bytes spill stores" in backend.last_build.log
    counts = sass_counts(tmp_path / "kernel.cubin")
    short = {op: counts[op] for op in meant if counts[op] < meant[op]}
    assert not short, f"too few of {short} (want at least {meant}): {dict(counts)}"
    absent = {"HMMA", "HGMMA", "UTMALDG", "LDGSTS"} - set(meant)
    assert not any(counts[op] for op in absent), f"unexpected instructions: {dict(counts)}"


@pytest.mark.parametrize("options", [{}, {"disable_tma_store": True}, {"enable_persistent": True}])
def test_gemm_epilogue_reads_the_accumulator_after_its_last_wgmma_wait(tmp_path, options):
    """In the SASS, nothing converts the accumulator between the last HGMMA and the wait for it
    (WARPGROUP.DEPBAR.LE gsb0, 0x0). With the final wait after the k-loop, ptxas 13.0 moved the
    TMA-store epilogue's F2FP conversions above it: a quarter of the output was wrong on the H200."""
    from tilelang_cuda import compiler

    # five slots: the chain (one batch in flight, its last k-tile peeled) is what ptxas got wrong
    compile_kernel(kernels.make_gemm(1024, 1024, 1024, bm=128, bn=128, bk=64, threads=256, stages=5),
                   "sm_90a", tmp_path, **options)
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    early = 0
    for line in compiler.sass(tmp_path / "kernel.cubin").splitlines():
        if "HGMMA" in line:
            early = 0
        elif "F2FP" in line:
            early += 1
        elif "WARPGROUP.DEPBAR.LE gsb0, 0x0" in line:
            break
    else:
        pytest.fail("no WARPGROUP.DEPBAR.LE gsb0, 0x0 in the SASS")
    assert early == 0, f"{early} accumulator conversions before the last wgmma wait"


def test_overlap_block_puts_the_softmax_exps_before_the_wait_for_pv(tmp_path):
    """tl.enable_overlap_block: in FlashAttention's steady loop every exp of the softmax (64 per
    thread for a 128x128 tile) sits between wgmma.wait_group 1 (for Q K^T) and wait_group 0 (for
    the previous P V) in the SASS, so they run under P V; no spills, no wgmma serialization."""
    from tilelang_cuda import compiler

    func = kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256)
    backend, source = compile_kernel(func, "sm_90a", tmp_path, ptxas_verbose=True, enable_overlap_block=True)
    assert "if (tl_opaque_true())" in source
    log = backend.last_build.log
    assert "0 bytes spill stores" in log and "serialized" not in log, log
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    under, casts, exps = [], [], None
    for line in compiler.sass(tmp_path / "kernel.cubin").splitlines():
        if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in line:
            exps, cast = 0, 0
        elif "WARPGROUP.DEPBAR.LE gsb0, 0x0" in line and exps is not None:
            under.append(exps)
            casts.append(cast)
            exps = None
        elif "MUFU.EX2" in line and exps is not None:
            exps += 1
        elif "F2FP" in line and exps is not None:
            cast += 1
    assert under == [64], f"exps between the two waits: {under}"
    # P (the registers P V reads) is rewritten only after that wait: the block boundary the
    # option adds must not let ptxas move the cast above it (as it moved GEMM's epilogue reads)
    assert casts == [0], f"F2FP before the wait for P V: {casts}"


@pytest.mark.parametrize("device_compiler", ["nvcc", "nvrtc"])
def test_both_device_compilers_give_tensor_core_code(tmp_path, device_compiler):
    from tilelang_cuda import nvrtc

    if device_compiler == "nvrtc" and not nvrtc.available():
        pytest.skip("libnvrtc not found: pip install nvidia-cuda-nvrtc (or a CUDA toolkit with it)")
    compile_kernel(kernels.make_gemm(256, 256, 64), "sm_90a", tmp_path, device_compiler=device_compiler)
    counts = sass_counts(tmp_path / "kernel.cubin")
    assert counts["HGMMA"] >= 4 and counts["UTMALDG"] >= 2


def test_device_compile_failure_in_auto_mode_ends_with_nvccs_error(tmp_path):
    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions

    with pytest.raises(CompileError) as info:
        compiler.compile_device("this is not cuda;", "sm_80", tmp_path, CudaOptions())
    assert "nvcc" in info.value.command[0] and "error" in info.value.log


@pytest.mark.parametrize("host_build", ["split", "nvcc"])
def test_tma_kernel_libraries_leave_no_driver_symbol_undefined(tmp_path, host_build):
    """A TMA kernel's host wrapper encodes tensor maps with the driver's cuTensorMapEncodeTiled.
    Both build routes resolve it through the runtime's driver entry point: nvcc's single-file
    route used to leave it undefined, and the first launch killed the process (the H200's GPU
    tests: a crashed worker)."""
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) not found")
    _, source = compile_kernel(kernels.make_gemm(512, 512, 512, stages=4), "sm_90a", tmp_path,
                               host_build=host_build, device_compiler="nvcc")
    assert "cuTensorMapEncodeTiled" in source
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(tmp_path / "kernel.so")],
                               capture_output=True, text=True, check=True).stdout.split()
    assert not [s for s in undefined if s.startswith("cu") and not s.startswith("cuda")], undefined


def test_split_host_asks_cuda_for_the_device_once_per_launch(tmp_path):
    """The split wrapper's device guard records the device it made current; the stream lookup
    and the dynamic shared memory opt-in read it (tl_current_device) instead of calling
    cudaGetDevice again. Attention opts in to dynamic shared memory, so it had three calls."""
    from tilelang_cuda.codegen import split_source

    _, source = compile_kernel(kernels.make_flash_attention(1, 2, 200, 64, 64, 64, 128), "sm_80", tmp_path,
                               host_build="split", device_compiler="nvcc")
    host = split_source(source).host
    wrapper = host[host.index("__tvm_ffi_"):]
    assert "cudaGetDevice" not in wrapper and "tl_current_device(&cuda_device" in wrapper
    guard = host[host.index("struct CUDADeviceGuard"):host.index("static cudaError_t tl_current_device")]
    assert guard.count("cudaGetDevice") == 1 and "tl_device = target_;" in guard and "tl_device = -1;" in guard


def test_auto_takes_nvcc_over_an_nvrtc_release_whose_code_is_slower(monkeypatch):
    """NVRTC 12.x and 13.0 leave 64-bit address arithmetic unnarrowed (0.3-5.6% slower kernels
    on the H200 with 13.0): device_compiler="auto" takes nvcc over them where nvcc is installed,
    and keeps NVRTC from 13.1 on, or when there is no nvcc to take."""
    from tilelang_cuda import compiler, nvrtc

    monkeypatch.setattr(nvrtc, "available", lambda: True)
    monkeypatch.setattr(compiler, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    for release in ((12, 0), (12, 4), (12, 9), (13, 0)):
        monkeypatch.setattr(nvrtc, "version_tuple", lambda release=release: release)
        assert not compiler.prefers_nvrtc(), release
    for release in ((13, 1), (13, 5), (14, 0)):
        monkeypatch.setattr(nvrtc, "version_tuple", lambda release=release: release)
        assert compiler.prefers_nvrtc(), release

    def no_nvcc():
        raise CompileError("nvcc not found")

    monkeypatch.setattr(nvrtc, "version_tuple", lambda: (13, 0))
    monkeypatch.setattr(compiler, "find_nvcc", no_nvcc)
    assert compiler.prefers_nvrtc()
    monkeypatch.setattr(nvrtc, "available", lambda: False)
    assert not compiler.prefers_nvrtc()


@pytest.mark.parametrize("prelude", [False, True])
def test_imported_device_source_is_put_before_the_kernel_and_builds(tmp_path, prelude):
    """T.import_source / T.Kernel(prelude=...): the source sits before the kernel that calls it
    (nvcc builds it; the GPU test runs it), once however often it is imported."""
    _, source = compile_kernel(kernels.make_imported_source(prelude), "sm_80", tmp_path)
    assert source.count("__device__ void user_twice") == 1
    assert source.index("__device__ void user_twice") < source.index('extern "C" __global__')
    assert "user_twice(" in source[source.index('extern "C" __global__'):]
