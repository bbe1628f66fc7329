"""Fragment and Layout: bijectivity, reductions, swizzles, and the mma.sync tables of the PTX ISA."""

import itertools
import math

import pytest

from tilelang_core.errors import LayoutError
from tilelang_core.layout import LOCAL, THREAD, Digit, Fragment, Layout, make_swizzled_layout


def owners(frag: Fragment) -> dict:
    """(thread, local) -> element, for every element and replica; fails on a collision."""
    seen = {}
    for idx in itertools.product(*(range(s) for s in frag.shape)):
        for rep in range(frag.replicas):
            key = (frag.thread_of(*idx, replica=rep), frag.local_of(*idx))
            assert key not in seen, f"{key} holds both {seen[key]} and {idx}"
            seen[key] = idx
    return seen


@pytest.mark.parametrize("shape,threads,vector", [((4, 8), 8, 2), ((64, 64), 128, 4),
                                                  ((128,), 128, 1), ((16, 16), 128, 1), ((8, 32), 32, 8),
                                                  ((16, 96), 64, 4), ((10, 24), 128, 1), ((3, 5), 32, 1),
                                                  ((2, 3, 40), 64, 4)])
def test_spread_is_a_bijection_and_inverse_agrees(shape, threads, vector):
    frag = Fragment.spread(shape, threads, vector)
    seen = owners(frag)
    assert len(seen) == frag.num_threads * frag.local_size
    for (t, l), idx in seen.items():
        assert tuple(frag.index_of(t, l)) == idx


def test_spread_keeps_vector_runs_contiguous():
    frag = Fragment.spread((64, 64), 128, 4)
    assert [frag.thread_of(0, j) for j in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [frag.local_of(0, j) for j in range(4)] == [0, 1, 2, 3]


def test_non_dense_strides_are_rejected():
    with pytest.raises(LayoutError, match="bijection"):
        Fragment((4,), ((Digit(4, THREAD, 2),),))


def test_reduce_replicates_the_reduced_threads():
    frag = Fragment.spread((16, 8), 32, 2)  # 4 threads per row
    row = frag.reduce(1)
    assert row.shape == (16,) and row.replicas == 4
    for i in range(16):
        holders = {frag.thread_of(i, j) for j in range(8)}
        assert {row.thread_of(i, replica=r) for r in range(row.replicas)} == holders
    owners(row)


def test_table_draws_small_fragments():
    text = Fragment.spread((2, 4), 4, 2).table()
    assert text.splitlines()[0].split() == ["T0:0", "T0:1", "T1:0", "T1:1"]


def test_row_major_and_swizzles_are_bijective():
    assert Layout.row_major((4, 8)).offset(1, 2) == 10
    for rows, cols, bits in [(8, 64, 16), (128, 32, 16), (32, 128, 16), (64, 16, 16), (16, 32, 32), (32, 48, 16),
                              (16, 40, 16), (8, 24, 32)]:
        assert make_swizzled_layout(rows, cols, bits).is_bijective(), (rows, cols, bits)


def test_swizzle_spreads_eight_rows_over_all_banks():
    """ldmatrix reads one 16-byte chunk column from 8 consecutive rows: all 8 must differ in bank
    group (offset // 8 halves % 8) for a conflict-free access."""
    for rows, cols in [(64, 64), (128, 32), (32, 128)]:
        lay = make_swizzled_layout(rows, cols, 16)
        for chunk in range(cols // 8):
            for r0 in range(0, rows, 8):
                groups = {(lay.offset(r, chunk * 8) // 8) % 8 for r in range(r0, r0 + 8)}
                assert len(groups) == 8, (rows, cols, chunk, r0)


def test_swizzle_keeps_16_byte_chunks_contiguous():
    lay = make_swizzled_layout(32, 64, 16)
    for i in range(32):
        for c in range(8):
            base = lay.offset(i, c * 8)
            assert [lay.offset(i, c * 8 + k) for k in range(8)] == list(range(base, base + 8))


def _factorizations(n: int, parts: int) -> list[tuple[int, ...]]:
    if parts == 1:
        return [(n,)]
    return [(d, *rest) for d in range(1, n + 1) if n % d == 0 for rest in _factorizations(n // d, parts - 1)]


@pytest.mark.parametrize("shape,threads,vector", [((2, 192), 128, 4), ((64, 32), 128, 4), ((4, 24), 32, 2),
                                                  ((6, 10), 32, 1), ((1, 96), 64, 2)])
def test_reshape_keeps_every_element_in_its_thread_and_register(shape, threads, vector):
    """T.reshape of a fragment: element k (row-major) of the view is element k of the tile, in
    the same thread and register, for every shape the layout allows; the others are refused."""
    frag = Fragment.spread(shape, threads, vector)
    size = frag.shape[0] * frag.shape[1]
    tried = refused = 0
    for parts in (1, 2, 3):
        for new in _factorizations(size, parts):
            try:
                view = frag.reshape(new)
            except LayoutError as err:
                assert "cannot be reshaped" in str(err)
                refused += 1
                continue
            tried += 1
            assert view.num_threads == frag.num_threads and view.local_size == frag.local_size
            for idx in itertools.product(*(range(s) for s in new)):
                flat = 0
                for i, s in zip(idx, new):
                    flat = flat * s + i
                src = (flat // frag.shape[1], flat % frag.shape[1])
                for rep in range(frag.replicas):
                    assert view.thread_of(*idx, replica=rep) == frag.thread_of(*src, replica=rep)
                assert view.local_of(*idx) == frag.local_of(*src)
            assert view.reshape(frag.shape).canonical() == frag.canonical()
    assert tried > 0


def test_reshape_that_cuts_a_digit_unevenly_is_refused():
    frag = Fragment.spread((6,), 6)          # one digit of 6 threads
    with pytest.raises(LayoutError, match="cannot be reshaped to \\[3, 2\\]|unevenly"):
        Fragment.spread((4, 6), 24).reshape((6, 4))
    assert frag.reshape((2, 3)).thread_of(1, 2) == 5


def test_canonical_merges_digits_that_continue_each_other():
    split = Fragment((8,), ((Digit(2, THREAD, 4), Digit(4, THREAD, 1)),))
    assert split != Fragment.spread((8,), 8)
    assert split.canonical() == Fragment.spread((8,), 8).canonical()


def test_canonical_merges_replicas_that_continue_each_other():
    """A row statistic reduced from a tile and one broadcast from it hold their copies in the same
    threads, numbered differently (TileKernels' swiglu cast: "two different layouts" before);
    copies in other threads still differ."""
    row = (Digit(2, LOCAL, 1), Digit(2, THREAD, 128))
    one = Fragment((4,), (row,), (Digit(128, THREAD, 1),))
    two = Fragment((4,), (row,), (Digit(16, THREAD, 1), Digit(8, THREAD, 16)))
    swapped = Fragment((4,), (row,), (Digit(8, THREAD, 16), Digit(16, THREAD, 1)))
    assert one.canonical() == two.canonical() == swapped.canonical()
    for t in range(256):
        assert (one.replica_of(t) == 0) == (two.replica_of(t) == 0)
    inner = (Digit(2, LOCAL, 1), Digit(2, THREAD, 1))
    other = Fragment((4,), (inner,), (Digit(128, THREAD, 2),))
    assert Fragment((4,), (inner,), (Digit(16, THREAD, 2), Digit(8, THREAD, 32))).canonical() == other.canonical()
    assert other.canonical() != one.canonical()


def test_gemm_fragment_8x8_places_pairs_of_a_row_in_one_lane():
    from tilelang_core.layout import make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed

    f, t = make_gemm_fragment_8x8(), make_gemm_fragment_8x8_transposed()
    assert (f.num_threads, f.local_size, t.num_threads, t.local_size) == (32, 2, 32, 2)
    for i in range(8):
        for j in range(8):
            assert (f.thread_of(i, j), f.local_of(i, j)) == (4 * i + j // 2, j % 2)
            assert (t.thread_of(i, j), t.local_of(i, j)) == (4 * j + i // 2, i % 2)
            assert f.index_of(4 * i + j // 2, j % 2) == [i, j]


# -- TileLang's layout algebra: repeat, replicate, condense_rep_var, is_equal ---------------------
def _base(shape, threads, vector, copies):
    return Fragment.spread(shape, threads, vector).replicate(copies)


def _repeat_reference(base, repeats, on_thread, lower_dim_first, idx, replica=0):
    """TileLang's rule, written out: element idx is element idx % shape of copy idx // shape; the
    copies numbered in mixed radix (last dimension fastest with lower_dim_first) above the
    existing threads or registers."""
    inner = [i % s for i, s in zip(idx, base.shape)]
    block = [i // s for i, s in zip(idx, base.shape)]
    order = list(reversed(range(len(idx)))) if lower_dim_first else list(range(len(idx)))
    number, place = 0, 1
    for d in order:
        number += block[d] * place
        place *= repeats[d]
    thread, local = base.thread_of(*inner, replica=replica), base.local_of(*inner)
    if on_thread:
        return thread + base.num_threads * number, local
    return thread, local + base.local_size * number


@pytest.mark.parametrize("shape, threads, vector, copies", [((4, 8), 8, 2, 1), ((8, 8), 32, 2, 2), ((2, 3), 2, 1, 1),
                                                            ((16,), 4, 4, 3)])
@pytest.mark.parametrize("on_thread", [False, True])
@pytest.mark.parametrize("lower_dim_first", [False, True])
def test_repeat_follows_tilelangs_rule(shape, threads, vector, copies, on_thread, lower_dim_first):
    base = _base(shape, threads, vector, copies)
    repeats = [2, 3][:len(shape)] if len(shape) == 2 else [3]
    f = base.repeat(repeats, repeat_on_thread=on_thread, lower_dim_first=lower_dim_first)
    assert f.shape == tuple(s * r for s, r in zip(shape, repeats))
    assert f.num_threads == base.num_threads * (math.prod(repeats) if on_thread else 1)
    assert f.local_size == base.local_size * (1 if on_thread else math.prod(repeats))
    seen = set()
    for idx in itertools.product(*(range(n) for n in f.shape)):
        for r in range(f.replicas):
            got = (f.thread_of(*idx, replica=r), f.local_of(*idx))
            assert got == _repeat_reference(base, repeats, on_thread, lower_dim_first, idx, r), idx
            seen.add(got)
    assert len(seen) == math.prod(f.shape) * f.replicas  # each (thread, register) once


def test_replicate_puts_each_copy_on_new_threads():
    base = Fragment.spread((4, 8), 8, 2)
    f = base.replicate(3)
    assert (f.num_threads, f.replicas, f.local_size) == (24, 3, base.local_size)
    for idx in itertools.product(range(4), range(8)):
        for c in range(3):
            assert f.thread_of(*idx, replica=c) == base.thread_of(*idx) + 8 * c
    twice = f.replicate(2)  # copies of copies: copy c2 of copy c1 on threads (c2 * 3 + c1) * 8 + t
    assert twice.thread_of(1, 2, replica=4) == base.thread_of(1, 2) + 8 * 4
    with pytest.raises(LayoutError, match="positive integer"):
        base.replicate(0)


def test_is_equal_and_condense_compare_mappings_not_spellings():
    f = Fragment.spread((8, 8), 16, 2)
    split = f.reshape((8, 8))  # the same digits, possibly split differently
    assert f.is_equal(split) and f.condense_rep_var().is_equal(f)
    assert not f.is_equal(Fragment.spread((8, 8), 16, 4))
    assert f.get_thread_size() == 16 and f.map_forward_thread([3, 5]) == f.thread_of(3, 5)


def test_repeat_of_the_wrong_rank_is_refused():
    with pytest.raises(LayoutError, match="one per dimension"):
        Fragment.spread((4, 8), 8).repeat([2])
