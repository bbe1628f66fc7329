"""On the H200: this stop's TileLang language rules run on sm_90a against torch (skipped without a
GPU). The kernels are the ones compiled by nvcc in CI (backends/cuda/tests/test_language_fidelity_build.py)
and run on cpu and the SIMT interpreters (tests/language/test_named_barriers.py, test_block_shapes.py)."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "language"))

import tilelang_core as tl  # noqa: E402
from fidelity_kernels import index_mask, producer_consumer, splitk_gemv, suffix_sums  # noqa: E402
from test_language_fidelity_build import binary, column_sums, element_gather, row_reduce, vectorized_cast  # noqa: E402


def cuda(func):
    return tl.compile(func, target="cuda")


@pytest.mark.parametrize("R,threads", [(256, 1024), (128, 256), (64, 64)])
def test_named_barrier_scan_over_part_of_the_block(R, threads):
    kernel = cuda(suffix_sums(R, threads))
    for seed in range(3):
        gen = torch.Generator("cuda").manual_seed(seed)
        h = torch.randint(-100, 100, (R,), device="cuda", dtype=torch.int32, generator=gen)
        o = torch.zeros(R, device="cuda", dtype=torch.int32)
        kernel(h, o)
        torch.testing.assert_close(o, h.flip(0).cumsum(0).flip(0).to(torch.int32), rtol=0, atol=0)


@pytest.mark.parametrize("N,K,BN,BK,tile_k", [(1000, 1024, 32, 4, 8), (257, 300, 16, 8, 2)])
def test_splitk_gemv_on_a_2d_block(N, K, BN, BK, tile_k):
    a = torch.randn(K, device="cuda")
    b = torch.randn(N, K, device="cuda")
    c = torch.full((N,), float("nan"), device="cuda")
    cuda(splitk_gemv(N, K, BN, BK, tile_k))(a, b, c)
    torch.testing.assert_close(c.double(), b.double() @ a.double(), rtol=1e-4, atol=1e-3)


def test_column_sums_on_a_2d_block():
    b = torch.randn(64, 96, device="cuda")
    c = torch.zeros(64, device="cuda")
    cuda(column_sums())(b, c)
    torch.testing.assert_close(c.double(), b.double().sum(1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "uint64", "float8_e4m3fn", "float8_e5m2"])
def test_vectorized_casts(dtype):
    a = torch.zeros(64, device="cuda", dtype=getattr(torch, dtype))
    cuda(vectorized_cast(dtype))(a)
    want = torch.zeros(64, dtype=torch.float64)
    for k in range(4):
        want[8 * k:8 * k + 2 ** k] = torch.arange(1, 2 ** k + 1)
    torch.testing.assert_close(a.cpu().to(torch.float64), want, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["max", "min", "clamp"])
def test_fp8_min_max(op):
    a = torch.randint(-4, 5, (256,), device="cuda").float()
    b = torch.randint(-4, 5, (256,), device="cuda").float()
    c = torch.empty(256, device="cuda", dtype=torch.float8_e4m3fn)
    cuda(binary("float8_e4m3fn", op))(a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn), c)
    want = {"max": torch.maximum(a, b), "min": torch.minimum(a, b), "clamp": a.clamp(-1, 1)}[op]
    torch.testing.assert_close(c.float(), want, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["sum", "max", "min", "bitand", "bitor", "bitxor"])
def test_int64_row_reduction(kind):
    a = torch.randint(-2**40, 2**40, (8, 64), device="cuda", dtype=torch.int64)
    b = torch.zeros(8, device="cuda", dtype=torch.int64)
    cuda(row_reduce("int64", kind))(a, b)
    if kind.startswith("bit"):
        import functools

        op = {"bitand": torch.bitwise_and, "bitor": torch.bitwise_or, "bitxor": torch.bitwise_xor}[kind]
        want = functools.reduce(op, a.unbind(1))
    else:
        want = {"sum": a.sum(1), "max": a.max(1).values, "min": a.min(1).values}[kind]
    torch.testing.assert_close(b, want, rtol=0, atol=0)


def test_copy_between_two_elements():
    perm = torch.randperm(16, device="cuda")
    x = torch.randn(16, device="cuda")
    out = torch.full((16,), float("nan"), device="cuda")
    cuda(element_gather())(perm, x, out)
    torch.testing.assert_close(out, x[perm], rtol=0, atol=0)


@pytest.mark.parametrize("N,block", [(1 << 20, 256), (300, 128)])
def test_programmatic_dependent_launch_pair(N, block):
    """T.pdl_trigger / T.pdl_sync (tests/language/test_launch_dependency.py): the second kernel is
    launched for overlap and reads the first kernel's output after its wait; repeated so that a
    launch that overlaps shows up as a wrong C."""
    kernel = cuda(producer_consumer(N, block, work=64))
    a = torch.randn(N, device="cuda")
    for _ in range(20):
        b, c, pre = (torch.full((N,), float("nan"), device="cuda") for _ in range(3))
        kernel(a, b, c, pre)
        torch.testing.assert_close(c, (a + 1.0) * 2.0, rtol=0, atol=0)
        torch.testing.assert_close(b, a + 1.0, rtol=0, atol=0)


@pytest.mark.parametrize("BS,D,split,source", [(32, 64, 2, "gemm"), (64, 128, 4, "gemm"), (32, 16, 2, "copy")])
def test_shifted_fragment_reads_on_sm90(BS, D, split, source):
    """tests/language/test_shifted_fragment_reads.py's kernels on the default sm_90a schedule (a
    wgmma accumulator read half by half, as TileLang's sparse MLA backward does). Passed on the H200
    (stop 41, then opt-in; stop 42 by default, with that example)."""
    from test_shifted_fragment_reads import halves

    a = torch.randn(BS, BS, device="cuda", dtype=torch.float16)
    b = torch.randn(BS, D, device="cuda", dtype=torch.float16)
    o = torch.full((split, BS // split, D), float("nan"), device="cuda")
    cuda(halves(BS, D, split, source))(a, b, o)
    full = a.double() @ b.double() if source == "gemm" else b.double()
    torch.testing.assert_close(o.double(), 2 * full.reshape(split, BS // split, D), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("M,N,bM,bN,order", [(1024, 1024, 128, 128, "ij"), (1024, 576, 32, 576, "ij"),
                                             (100, 70, 32, 32, "ji")])
def test_flat_fragment_views_on_sm90(M, N, bM, bN, order):
    from test_flat_fragment_views import flatten

    a = torch.randn(M, N, device="cuda")
    b = torch.full((M * N,), float("nan"), device="cuda")
    cuda(flatten(M, N, bM, bN, order))(a, b)
    torch.testing.assert_close(b, (a + 1.0).reshape(-1), rtol=0, atol=0)


def test_bool_mask_of_comparisons():
    """A bool fragment of comparisons (tests/language/test_printer_limits.py: it was stored as 2-byte
    vector lanes into 1-byte bools, the cause of TileLang's sparse MLA backward's wrong dQ)."""
    ind = torch.randint(0, 21, (64,), device="cuda", dtype=torch.int32)
    a = torch.randn(32, 64, device="cuda")
    o = torch.full((32, 64), float("nan"), device="cuda")
    cuda(index_mask())(ind, a, o)
    torch.testing.assert_close(o, torch.where(ind[None, :] <= 10, a, torch.full_like(a, -1.0)), rtol=0, atol=0)


@pytest.mark.parametrize("M,N,group", [(64, 256, 32), (70, 128, 32)])
def test_fp4_act_quant_through_4bit_tiles(M, N, group):
    """tests/language/test_subbyte_tiles.py's act_quant kernel (floats into an fp4 fragment, to an
    fp4 shared tile, to the packed tensor) against numpy's round-to-nearest-even codes."""
    import numpy as np
    from test_subbyte_tiles import quantize, reference_codes

    x = torch.randn(M, N, device="cuda") * 3
    q = torch.full((M, N // 2), 0x77, device="cuda", dtype=torch.int8)
    s = torch.full((M, N // group), float("nan"), device="cuda")
    cuda(quantize(M, N, group=group))(x, q, s)
    codes, scale = reference_codes(x.cpu().numpy(), group)
    np.testing.assert_array_equal(s.cpu().numpy(), scale)
    got = q.cpu().numpy().view(np.uint8).astype(np.int64)
    np.testing.assert_array_equal(np.stack([got & 15, got >> 4], -1).reshape(M, N), codes)


@pytest.mark.parametrize("threads", [64, 128])
def test_annotated_fragment_layout_on_sm90(threads):
    """tests/language/test_annotated_fragments.py's T.Fragment-annotated row normalization."""
    from test_annotated_fragments import ROWS, WIDTH, strided

    x = torch.rand(ROWS, WIDTH, device="cuda") + 0.5
    o = torch.full((ROWS, WIDTH), float("nan"), device="cuda")
    w = torch.full((ROWS, WIDTH), -7, device="cuda", dtype=torch.int32)
    cuda(strided(threads=threads, who=threads == 64))(x, o, w)
    torch.testing.assert_close(o.double(), x.double() / x.double().sum(1, keepdim=True), rtol=1e-6, atol=0)
    if threads == 64:
        want = torch.arange(WIDTH, device="cuda") % 16 + 16 * torch.arange(ROWS, device="cuda")[:, None]
        torch.testing.assert_close(w, want.int(), rtol=0, atol=0)


def test_negative_indices_on_sm90():
    from test_negative_indices import from_the_end

    a, m = torch.randn(16, device="cuda"), torch.randn(4, 16, device="cuda")
    b, c = torch.full((16,), float("nan"), device="cuda"), torch.full((4, 16), float("nan"), device="cuda")
    cuda(from_the_end())(a, m, b, c)
    torch.testing.assert_close(b, torch.cat([a.flip(0)[:4], a[:12]]), rtol=0, atol=0)
    torch.testing.assert_close(c[0], a.flip(0) + m[-1], rtol=0, atol=0)


def test_sync_grid_orders_blocks():
    """tests/language/test_grid_sync.py's kernel: every block reads another block's phase-1 result."""
    from test_grid_sync import reverse_across_blocks

    kernel = cuda(reverse_across_blocks(1024, 64))
    for _ in range(10):
        a = torch.randn(1024, device="cuda")
        b = torch.full((1024,), float("nan"), device="cuda")
        want = (a * 2).flip(0)
        kernel(a, b)
        torch.testing.assert_close(b, want, rtol=0, atol=0)


def test_sync_grid_inside_t_parallel_splits_the_loop():
    """TileLang's cooperative-launch example: T.sync_grid() inside T.Parallel (the loop is split
    there, transform/parallel_barriers.py); each element gets its mirror added."""
    from test_parallel_barriers_build import grid_reverse_in_parallel

    kernel = cuda(grid_reverse_in_parallel(1024, 64))
    for _ in range(5):
        a = torch.randn(1024, device="cuda")
        want = a + a.flip(0)
        kernel(a)
        torch.testing.assert_close(a, want, rtol=0, atol=0)


@pytest.mark.parametrize("P,threads", [(64, 128), (256, 128), (300, 96)])
def test_sync_threads_inside_t_parallel_separates_the_phases(P, threads):
    """tests/language/test_parallel_barriers.py's kernel: with more iterations than threads each
    thread's first iteration read a slot its second had not written yet before the split."""
    from test_parallel_barriers import reverse_in_blocks

    a = torch.randn(P * 2, device="cuda")
    b = torch.full((P * 2,), float("nan"), device="cuda")
    cuda(reverse_in_blocks(P, threads))(a, b)
    torch.testing.assert_close(b, (a * 2).view(2, P).flip(1).reshape(-1), rtol=0, atol=0)


def test_loops_handing_data_over_through_global_memory_wait_for_each_other():
    """tests/simt/test_global_barriers.py's kernel: the second loop reads what other threads of
    the block wrote in the first (a barrier between them since stop 57)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "simt"))
    from test_global_barriers import handoff

    kernel = cuda(handoff(1024, 256))
    for _ in range(20):
        a = torch.randn(1024, device="cuda")
        b = torch.zeros(1024, device="cuda")
        c = torch.zeros(1024, device="cuda")
        kernel(a, b, c)
        torch.testing.assert_close(c, (a * 2).flip(0), rtol=0, atol=0)


def test_sync_grid_on_a_grid_too_large_to_be_resident_fails_the_launch():
    from test_grid_sync import reverse_across_blocks

    n = 64 * 200000
    a, b = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
    with pytest.raises(Exception, match="(?i)cooperative"):
        cuda(reverse_across_blocks(n, 64))(a, b)
        torch.cuda.synchronize()


def test_copies_of_views_with_a_last_stride_of_two():
    """tests/language/test_vectorized_widths.py's kernel on torch views (A[:, 0, :, 0]): it moved
    16-byte vectors there (TileLang's eager copy test failed on the H200)."""
    from test_vectorized_widths import every_other_column

    base_a = torch.randn(16, 2, 64, 2, device="cuda")
    base_b = torch.full((16, 2, 64, 2), 7.0, device="cuda")
    base_c = torch.full((16, 64, 2), 7.0, device="cuda")
    cuda(every_other_column())(base_a[:, 0, :, 0], base_b[:, 0, :, 0], base_c[:, :, 0])
    torch.testing.assert_close(base_b[:, 0, :, 0], base_a[:, 0, :, 0] + 1.0, rtol=0, atol=0)
    torch.testing.assert_close(base_c[:, :, 0], base_a[:, 0, :, 0], rtol=0, atol=0)
    assert (base_b[:, 1] == 7.0).all() and (base_b[:, 0, :, 1] == 7.0).all() and (base_c[:, :, 1] == 7.0).all()


def test_one_element_copies_in_parallel_on_sm90():
    from test_element_copies import gather

    a = torch.randn(50, 20, device="cuda").half()
    idx = torch.randperm(50, device="cuda").int()
    b = torch.full((50, 20), float("nan"), device="cuda")
    cuda(gather(50, 20))(a, idx, b)
    torch.testing.assert_close(b, a[idx.long()].float(), rtol=0, atol=0)
