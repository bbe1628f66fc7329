"""On a GPU: kernels built by the cuda backend agree with torch in float64 (skipped without one)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import kernels  # noqa: E402
import tilelang_core.language as T  # noqa: E402


class Target:
    arch = "sm_90a"


def build(func, tmp_path, **options):
    tmp_path.mkdir(parents=True, exist_ok=True)
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    if torch.cuda.get_device_capability()[0] < 9:
        Target.arch = "sm_80"
    backend = CudaBackend(Target())
    opts = CudaOptions(**options)
    mod = backend.lower(func, opts)
    backend.build(mod, backend.codegen(mod, opts), opts, tmp_path)
    return backend.load(tmp_path / "kernel.so")


@pytest.mark.parametrize("shape,trans_b,dtype", [((256, 256, 256), False, "float16"),
                                                 ((1000, 1000, 1000), False, "float16"),
                                                 ((512, 384, 256), True, "float16"),
                                                 ((256, 256, 512), False, "bfloat16")])
def test_gemm_matches_torch(tmp_path, shape, trans_b, dtype):
    M, N, K = shape
    tdt = getattr(torch, dtype)
    kernel = build(kernels.make_gemm(M, N, K, dtype=getattr(T, dtype), out_dtype=getattr(T, dtype),
                                     trans_b=trans_b), tmp_path)
    a = torch.randn(M, K, device="cuda", dtype=tdt)
    b = torch.randn(N, K, device="cuda", dtype=tdt) if trans_b else torch.randn(K, N, device="cuda", dtype=tdt)
    c = torch.empty(M, N, device="cuda", dtype=tdt)
    kernel["gemm"](a, b, c)
    ref = a.double() @ (b.double().T if trans_b else b.double())
    torch.testing.assert_close(c.double(), ref, rtol=2e-2, atol=2e-2 * ref.abs().max().item())


@pytest.mark.parametrize("host_build,device_compiler", [("split", "auto"), ("split", "nvcc"),
                                                        ("nvcc", "nvcc")])
def test_every_build_route_launches(tmp_path, host_build, device_compiler):
    """split: cubin (NVRTC or nvcc) loaded by cudaLibraryLoadData, launched by kernel handle;
    nvcc: TVM's single .cu. The gemm needs 64 KB of dynamic shared memory: the opt-in attribute
    path (> 48 KB) runs too."""
    kernel = build(kernels.make_gemm(512, 512, 512, stages=4), tmp_path, host_build=host_build,
                   device_compiler=device_compiler)
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    c = torch.empty(512, 512, device="cuda", dtype=torch.float16)
    kernel["gemm"](a, b, c)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2, atol=0.5)


def test_row_max_matches_torch(tmp_path):
    kernel = build(kernels.make_row_max(512, 64), tmp_path)
    x = torch.randn(512, 64, device="cuda")
    y = torch.empty(512, device="cuda")
    kernel["row_max"](x, y)
    torch.testing.assert_close(y, (x * 2).amax(dim=1))


@pytest.mark.parametrize("M,N,bm,threads", [(1000, 128, 32, 128), (64, 512, 4, 128)])
def test_softmax_matches_torch(tmp_path, M, N, bm, threads):
    kernel = build(kernels.make_softmax(M, N, bm, threads), tmp_path)
    x = torch.randn(M, N, device="cuda")
    y = torch.empty_like(x)
    kernel["softmax"](x, y)
    torch.testing.assert_close(y, torch.softmax(x.double(), dim=1).float(), rtol=1e-5, atol=1e-6)


def test_gemm_rowmax_matches_torch(tmp_path):
    M, N, K = 512, 64, 128
    kernel = build(kernels.make_gemm_rowmax(M, N, K), tmp_path)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    r = torch.empty(M, device="cuda")
    kernel["gemm_rowmax"](a, b, r)
    ref = (0.5 * (a.double() @ b.double().T)).amax(dim=1)
    torch.testing.assert_close(r.double(), ref, rtol=1e-3, atol=1e-3)


def test_atomics_and_shared_roundtrip(tmp_path):
    M, N = 96, 64
    kernel = build(kernels.make_atomic_rowsum(M, N), tmp_path / "a")
    x = torch.randn(M, N, device="cuda")
    y = torch.zeros(N, device="cuda")
    z = torch.zeros(1, device="cuda")
    kernel["atomic_rowsum"](x, y, z)
    torch.testing.assert_close(y, x.sum(0), rtol=1e-4, atol=1e-4)
    assert z.item() == (M // 32) * 128  # a thread-level atomic: one add per thread
    kernel = build(kernels.make_shared_add(70, 100), tmp_path / "s")
    x = torch.randn(70, 100, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    kernel["shared_add"](x, y)
    torch.testing.assert_close(y, x + 1)


def test_runs_on_the_current_torch_stream(tmp_path):
    """The wrapper launches on TVMFFIEnvGetStream: torch's current stream."""
    kernel = build(kernels.make_gemm(256, 256, 256), tmp_path)
    a = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    c = torch.zeros(256, 256, device="cuda", dtype=torch.float16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(10_000_000)  # keep the stream busy: a launch on another stream would race
        kernel["gemm"](a, b, c)
    stream.synchronize()
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2, atol=0.5)


@pytest.mark.parametrize("M", [64, 1000])
def test_dynamic_gemm_matches_torch(tmp_path, M):
    kernel = build(kernels.make_dynamic_gemm(), tmp_path)
    a = torch.randn(M, 128, device="cuda", dtype=torch.float16)
    b = torch.randn(128, 256, device="cuda", dtype=torch.float16)
    c = torch.empty(M, 256, device="cuda")
    kernel["dyn_gemm"](a, b, c)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("B,H,S,D,bm,bn,threads", [(2, 4, 1000, 128, 128, 64, 256),
                                                   (1, 2, 512, 64, 64, 64, 128)])
def test_flash_attention_matches_sdpa(tmp_path, B, H, S, D, bm, bn, threads):
    kernel = build(kernels.make_flash_attention(B, H, S, D, bm, bn, threads), tmp_path)
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    kernel["flash_attn"](q, k, v, o)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(x.transpose(1, 2).double() for x in (q, k, v))).transpose(1, 2)
    torch.testing.assert_close(o.double(), ref, rtol=1e-2, atol=2e-3)


def test_fp32_gemm_with_disable_tf32_is_exact_fp32(tmp_path):
    kernel = build(kernels.make_gemm(300, 200, 100, bm=64, bn=64, bk=16, dtype=T.float32,
                                     out_dtype=T.float32), tmp_path, disable_tf32=True)
    a = torch.randn(300, 100, device="cuda")
    b = torch.randn(100, 200, device="cuda")
    c = torch.empty(300, 200, device="cuda")
    kernel["gemm"](a, b, c)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-4, atol=1e-4)


def truncate_tf32(x):
    """What mma .tf32 uses of a float32 operand: its 13 low mantissa bits dropped."""
    return (x.contiguous().view(torch.int32) & -0x2000).view(torch.float32)


@pytest.mark.parametrize("shape,trans_b", [((1000, 520, 264), False), ((1000, 520, 264), True),
                                           ((256, 256, 1024), True)])
def test_fp32_gemm_runs_on_tf32_tensor_cores(tmp_path, shape, trans_b):
    """float32 T.gemm is tf32 by default (like TileLang): within tf32 precision of float64, and
    the float64 product of the operands the instruction truncates up to fp32 accumulation."""
    M, N, K = shape
    kernel = build(kernels.make_gemm(M, N, K, bm=128, bn=128, bk=32, dtype=T.float32, out_dtype=T.float32,
                                     trans_b=trans_b), tmp_path)
    a = torch.randn(M, K, device="cuda")
    b = torch.randn(N, K, device="cuda") if trans_b else torch.randn(K, N, device="cuda")
    c = torch.full((M, N), float("nan"), device="cuda")
    kernel["gemm"](a, b, c)
    b_kn = b.T if trans_b else b
    torch.testing.assert_close(c.double(), a.double() @ b_kn.double(), rtol=1e-3, atol=2e-3 * K ** 0.5)
    truncated = truncate_tf32(a).double() @ truncate_tf32(b_kn).double()
    torch.testing.assert_close(c.double(), truncated, rtol=1e-5, atol=1e-5 * K ** 0.5)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("shape,trans_b", [((1000, 520, 264), False), ((1000, 520, 264), True),
                                           ((512, 512, 2048), True)])
def test_int8_gemm_on_tensor_cores_is_exact(tmp_path, dtype, shape, trans_b):
    M, N, K = shape
    kernel = build(kernels.make_gemm(M, N, K, bm=128, bn=128, bk=64, dtype=dtype, out_dtype=T.int32,
                                     accum_dtype=T.int32, trans_b=trans_b), tmp_path)
    lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
    tdt = getattr(torch, dtype)
    a = torch.randint(lo, hi, (M, K), device="cuda", dtype=tdt)
    b = torch.randint(lo, hi, (N, K) if trans_b else (K, N), device="cuda", dtype=tdt)
    c = torch.zeros(M, N, device="cuda", dtype=torch.int32)
    kernel["gemm"](a, b, c)
    # float64 products and sums of these integers are exact (|sum| < 2^31); torch has no int64 matmul on cuda
    ref = (a.double() @ (b.double().T if trans_b else b.double())).long()
    torch.testing.assert_close(c.long(), ref, rtol=0, atol=0)


def test_rms_norm_and_fused_epilogue(tmp_path):
    kernel = build(kernels.make_rms_norm(1000, 256), tmp_path / "rms")
    a = torch.randn(1000, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    b = torch.empty_like(a)
    kernel["rms"](a, w, b)
    ref = a.double() * torch.rsqrt(a.double().pow(2).mean(1, keepdim=True) + 1e-6) * w.double()
    torch.testing.assert_close(b.double(), ref, rtol=1e-4, atol=1e-5)
    kernel = build(kernels.make_matmul_bias_relu(100, 72, 64), tmp_path / "mm")
    x = torch.randn(100, 64, device="cuda", dtype=torch.float16)
    y = torch.randn(64, 72, device="cuda", dtype=torch.float16)
    bias = torch.randn(72, device="cuda")
    c = torch.empty(100, 72, device="cuda", dtype=torch.float16)
    kernel["mm"](x, y, bias, c)
    ref = torch.relu(x.double() @ y.double() + bias.double())
    torch.testing.assert_close(c.double(), ref, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("M", [1000, 128, 1])
def test_dynamic_m_gemm_matches_torch(tmp_path, M):
    """One build serves every M (a symbolic dimension: tensor maps and predicates at run time)."""
    kernel = build(kernels.make_dynamic_gemm(N=256, K=192, bm=64, bn=128, bk=64), tmp_path / "dyn")
    a = torch.randn(M, 192, device="cuda", dtype=torch.float16)
    b = torch.randn(192, 256, device="cuda", dtype=torch.float16)
    c = torch.full((M, 256), float("nan"), device="cuda")
    kernel["dyn_gemm"](a, b, c)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-2)


def test_kernels_launch_on_the_current_torch_stream(tmp_path):
    """Queued behind a long sleep on a side stream, the result is not there yet when the default
    stream looks, and is there once the side stream is done; two streams in flight agree."""
    kernel = build(kernels.make_softmax(256, 128, 4, 128), tmp_path)
    x = torch.randn(256, 128, device="cuda")
    y1, y2 = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    kernel["softmax"](x, torch.empty_like(x))  # first launch loads the module (may synchronize)
    s1, s2, s3 = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(s1):
        torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time ahead of the kernel on s1
        kernel["softmax"](x, y1)
    with torch.cuda.stream(s2):
        kernel["softmax"](x, y2)
    with torch.cuda.stream(s3):  # a look at y1 that does not wait for s1
        early = y1.to("cpu")
    assert not s1.query(), "the side stream finished its 50 ms sleep already?"
    assert torch.isnan(early).all(), "the kernel did not wait for its stream's earlier work"
    s1.synchronize()
    s2.synchronize()
    ref = torch.softmax(x.double(), dim=1).float()
    torch.testing.assert_close(y1, ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(y2, ref, rtol=1e-5, atol=1e-6)
