"""On the H200: fragments in T.Parallel written or read transposed, a row statistic read in a loop
over shared tiles, T.transpose, a while loop summing into T.alloc_var without a value and a
T.Parallel over a run-time extent, compiled for the GPU present (sm_90a on the H200) against
torch (skipped without a GPU). The same kernels run on cpu and the SIMT interpreters in
tests/simt/test_fragment_access_order.py, tests/language/test_transpose.py,
tests/language/test_tilelang_spellings.py and tests/language/test_symbolic_parallel.py."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core.language as T  # noqa: E402
from gpu_compile import compiled  # noqa: E402


@pytest.mark.parametrize("M,N,threads", [(64, 32, 128), (128, 128, 256), (8, 4, 32), (33, 17, 64)])
def test_fragment_written_and_read_transposed(M, N, threads):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, N), "float32")
            f = T.alloc_fragment((N, M), "float32")
            o = T.alloc_shared((M, N), "float32")
            T.copy(A, s)
            for i, j in T.Parallel(M, N):
                f[j, i] = s[i, j] * 2.0
            T.copy(f, B)
            for i, j in T.Parallel(M, N):
                o[i, j] = f[j, i] + 1.0
            T.copy(o, C)

    a = torch.randn(M, N, device="cuda")
    b = torch.full((N, M), float("nan"), device="cuda")
    c = torch.full((M, N), float("nan"), device="cuda")
    compiled(main)(a, b, c)
    torch.testing.assert_close(b, 2 * a.T)
    torch.testing.assert_close(c, 2 * a + 1)


@pytest.mark.parametrize("M,N,dim", [(64, 64, 1), (64, 64, 0), (16, 128, 1), (100, 24, 1)])
def test_row_statistic_in_a_loop_over_shared_tiles(M, N, dim):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((M, N), "float32")
            o = T.alloc_shared((M, N), "float32")
            m = T.alloc_fragment((N if dim == 0 else M,), "float32")
            T.copy(A, s)
            T.reduce_max(s, m, dim=dim)
            for i, j in T.Parallel(M, N):
                o[i, j] = T.exp(s[i, j] - (m[j] if dim == 0 else m[i]))
            T.copy(o, B)

    a = torch.randn(M, N, device="cuda")
    b = torch.full((M, N), float("nan"), device="cuda")
    compiled(main)(a, b)
    torch.testing.assert_close(b.double(), (a.double() - a.double().amax(dim, keepdim=True)).exp())


@pytest.mark.parametrize("M,N,bM,bN", [(128, 128, 128, 128), (256, 192, 64, 64), (100, 72, 64, 32)])
def test_transpose_through_shared(M, N, bM, bN):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((N, M), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            tile = T.alloc_shared((bM, bN), "float16")
            tile_t = T.alloc_shared((bN, bM), "float16")
            T.copy(A[by * bM, bx * bN], tile)
            T.transpose(tile, tile_t)
            T.copy(tile_t, B[bx * bN, by * bM])

    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = compiled(main, out_idx=[1])(a)
    torch.testing.assert_close(b, a.T)


def test_while_loop_sums_into_a_variable_declared_without_a_value():
    @T.prim_func
    def main(A: T.Tensor((128,), "int32"), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            i = T.alloc_var(T.int32, 0)
            s = T.alloc_var(T.int32)
            while i < n:
                s += i + T.get_thread_binding()
                i += 1
            A[T.get_thread_binding()] = s

    a = torch.full((128,), -7, device="cuda", dtype=torch.int32)
    compiled(main)(a, 10)
    assert a.tolist() == [45 + 10 * t for t in range(128)]


@pytest.mark.parametrize("valid_len", [0, 13, 200, 600])
def test_parallel_over_a_run_time_extent(valid_len):
    max_len = 512

    @T.prim_func
    def main(A: T.Tensor((max_len,), "float32"), B: T.Tensor((max_len,), "float32"), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(max_len):
                B[i] = 0.0
            span = T.min(n, max_len)
            for i in T.Parallel(span):
                B[i] = A[i] - 1.0

    a = torch.randn(max_len, device="cuda")
    b = torch.full((max_len,), float("nan"), device="cuda")
    compiled(main)(a, b, valid_len)
    want = torch.zeros_like(a)
    want[:valid_len] = a[:valid_len] - 1
    torch.testing.assert_close(b, want)


@pytest.mark.parametrize("dtype, window", [("float32", 4), ("float16", 8)])
def test_a_window_of_a_register_gemm_operand(dtype, window):
    """TileLang's mHC pre: x_frag[i, jj * window + j] inside T.Parallel, x_frag also a gemm's A."""
    TB, HB = 32, 256

    @T.prim_func
    def main(X: T.Tensor((TB, HB), dtype), Fn: T.Tensor((32, HB), dtype), O: T.Tensor((TB, 32), "float32"),
             S: T.Tensor((TB,), "float32")):
        with T.Kernel(1, threads=128):
            out_frag = T.alloc_fragment((TB, 32), "float32")
            part = T.alloc_fragment((TB, window), "float32")
            T.clear(out_frag)
            T.clear(part)
            xs = T.alloc_shared((TB, HB), dtype)
            fs = T.alloc_shared((32, HB), dtype)
            T.copy(X, xs)
            T.copy(Fn, fs)
            x = T.alloc_fragment((TB, HB), dtype)
            T.copy(xs, x)
            for jj in T.serial(HB // window):
                for i, j in T.Parallel(TB, window):
                    part[i, j] += T.cast(x[i, jj * window + j], "float32") * T.cast(x[i, jj * window + j], "float32")
            T.gemm(x, fs, out_frag, transpose_B=True)
            total = T.alloc_fragment(TB, "float32")
            T.reduce_sum(part, total)
            T.copy(total, S)
            T.copy(out_frag, O)

    tdt = getattr(torch, dtype)
    x = torch.randn(TB, HB, device="cuda", dtype=tdt)
    fn = torch.randn(32, HB, device="cuda", dtype=tdt)
    o = torch.full((TB, 32), float("nan"), device="cuda")
    s = torch.full((TB,), float("nan"), device="cuda")
    compiled(main)(x, fn, o, s)
    torch.testing.assert_close(s.double(), (x.double() ** 2).sum(1), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(o.double(), x.double() @ fn.double().T, rtol=2e-2, atol=5e-2)
