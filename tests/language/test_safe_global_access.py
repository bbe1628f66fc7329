"""TileLang's safe memory access for the global loads and stores a kernel writes itself, outside
tile ops and T.Parallel (transform/safe_global_access.py): past a tensor's edge a read gives 0 (or
its T.annotate_safe_value) and a write is skipped. DeepSeek's TileKernels walk 128-column tiles
over 576 columns this way, per thread, with vectorized loops; before the guard the last tile
wrote into the next row (GPU) or past the heap block (cpu: "corrupted double-linked list")."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.script import tirx as TS

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, lower, run


def scaled_tiles(rows, cols, tile_k=16, vec=4, threads=32, safe=None, store=T.serial):
    """O[r, c] = 2 * X[r, c + 1] (0 past X's edge, or ``safe``) per thread, a tile of ``tile_k``
    columns per block along y, ``vec`` columns per thread: the last tile overhangs when ``tile_k``
    does not divide ``cols``, and column ``c + 1`` overhangs in every row. ``store``: the loop
    kind of the writes (the reads are always ``T.vectorized``)."""
    per_row = tile_k // vec

    @T.prim_func
    def main(X: T.Tensor((rows, cols), "float32"), O: T.Tensor((rows, cols), "float32")):
        with T.Kernel(T.ceildiv(rows * per_row, threads), T.ceildiv(cols, tile_k), threads=threads) as (bx, by):
            if safe is not None:
                T.annotate_safe_value({X: safe})
            tid = T.get_thread_binding()
            flat = bx * threads + tid
            r = flat // per_row
            c0 = by * tile_k + flat % per_row * vec   # bound in the body, used by both loops
            buf = T.alloc_local((vec,), "float32")
            if r < rows:
                for j in T.vectorized(vec):
                    buf[j] = X[r, c0 + j + 1]
                for j in store(vec):
                    O[r, c0 + j] = buf[j] * 2.0

    return main


def reference(x, safe=0.0):
    shifted = np.full_like(x, safe, dtype=np.float64)
    shifted[:, :-1] = x[:, 1:]
    return 2 * shifted


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rows,cols", [(5, 36), (1, 7), (3, 1)])
def test_the_last_tile_overhangs_without_writing_past_the_tensor(path, rows, cols):
    x = np.random.default_rng(rows * 100 + cols).standard_normal((rows, cols)).astype(np.float32)
    o = np.full_like(x, np.nan)
    run(path, scaled_tiles(rows, cols), X=x, O=o)
    np.testing.assert_allclose(o, reference(x), rtol=1e-6)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_a_read_past_the_edge_gives_the_safe_value(path):
    x = np.random.default_rng(1).standard_normal((4, 20)).astype(np.float32)
    o = np.full_like(x, np.nan)
    run(path, scaled_tiles(4, 20, safe=-3.0), X=x, O=o)
    np.testing.assert_allclose(o, reference(x, safe=-3.0), rtol=1e-6)


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 40), vec=st.sampled_from([1, 2, 4]),
       store=st.sampled_from([T.serial, T.vectorized]))
def test_generated_ragged_shapes_on_the_cpu_oracle(rows, cols, vec, store):
    x = np.random.default_rng(rows * 64 + cols).standard_normal((rows, cols)).astype(np.float32)
    o = np.full_like(x, np.nan)
    run("cpu", scaled_tiles(rows, cols, tile_k=4 * vec, vec=vec, store=store), X=x, O=o)
    np.testing.assert_allclose(o, reference(x), rtol=1e-6)


def _vector_loops(func) -> list[str]:
    """The first line of the body of each ``T.vectorized`` loop in ``func``'s script."""
    lines = func.script().splitlines()
    return [lines[i + 1].strip() for i, line in enumerate(lines) if "T.vectorized" in line]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("cols", [36, 35, 3])
def test_guards_of_a_vectorized_loop_move_out_of_it(path, cols):
    """A guard inside a ``T.vectorized`` loop makes the loop scalar; the guards are tested once,
    on the first and the last lane, ahead of a vector version of the loop, and the guarded loop
    runs where they fail (the last tile of a row, including lanes past the edge: ``cols`` 35)."""
    func = scaled_tiles(4, cols, store=T.vectorized)
    bodies = _vector_loops(func)
    assert len(bodies) == 4  # reads and writes, each as vectors and as the guarded fallback
    assert sum(b.startswith("if ") or "T.if_then_else" in b for b in bodies) == 2
    x = np.random.default_rng(cols).standard_normal((4, cols)).astype(np.float32)
    o = np.full_like(x, np.nan)
    run(path, func, X=x, O=o)
    np.testing.assert_allclose(o, reference(x), rtol=1e-6)


def test_the_lifted_loop_compiles_to_vector_accesses_for_cuda():
    import tilelang_core as tl

    source = tl.compile(scaled_tiles(64, 576, tile_k=128, store=T.vectorized),
                        target="cuda:sm_90a").get_kernel_source()
    assert "*(float4*)(O_ptr" in source  # (the reads, one column off, are not 16-byte aligned)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_guards_that_cannot_move_stay_in_the_loop(path):
    """An index read from memory inside the loop (a gather) or one not affine in the lane cannot
    be tested ahead of the loop: those accesses keep their own guards, and the answer is right."""
    @T.prim_func
    def main(X: T.Tensor((10,), "float32"), Idx: T.Tensor((8,), "int32"), O: T.Tensor((2, 9), "float32")):
        with T.Kernel(1, threads=2):
            t = T.get_thread_binding()
            for j in T.vectorized(4):
                O[0, t * 4 + j] = X[Idx[t * 4 + j]]
            for j in T.vectorized(4):
                O[1, (t * 4 + j) * (t * 4 + j) // 5] = X[t * 4 + j + 3]

    bodies = _vector_loops(main)
    assert len(bodies) == 2 and all(b.startswith("if ") or "T.if_then_else" in b for b in bodies)
    x = np.arange(1, 11, dtype=np.float32)
    idx = np.array([3, -1, 9, 12, 0, 10, 5, 2], np.int32)
    o = np.full((2, 9), -1.0, np.float32)
    run(path, main, X=x, Idx=idx, O=o)
    expected = np.full((2, 9), -1.0)
    for k in range(8):
        expected[0, k] = x[idx[k]] if 0 <= idx[k] < 10 else 0.0
        if k * k // 5 < 9:
            expected[1, k * k // 5] = x[k + 3] if k + 3 < 10 else 0.0
    np.testing.assert_array_equal(o, expected)


def _guards(path, func) -> int:
    return lower(path, func).script().count("if ")


def test_an_assumed_fact_or_a_condition_keeps_the_guard_out():
    n = T.dynamic("n")

    def build(assume: bool, check: bool):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), lo: T.int32, hi: T.int32):
            with T.Kernel(1, threads=1):
                for i in T.serial(hi - lo):
                    if assume:
                        T.assume(lo + i >= 0 and lo + i < n)
                    if check:
                        if lo + i >= 0 and lo + i < n:
                            A[lo + i] = 1.0
                    else:
                        A[lo + i] = 1.0

        return main

    guarded = _guards("cuda:sm_80", build(False, False))
    assert guarded == 1
    assert _guards("cuda:sm_80", build(True, False)) == 0
    assert _guards("cuda:sm_80", build(False, True)) == 1  # the author's own if, no second one


def assumed_var(written_after: bool):
    """``out[0] = A[x]`` for a T.alloc_var ``x`` the author assumes inside A; ``written_after``:
    ``x`` changes between the assumption and the read, so the fact no longer holds there."""
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((2,), "float32"), lo: T.int32):
        with T.Kernel(1, threads=1):
            x = T.alloc_var(T.int32)
            x = lo
            T.assume(x >= 0 and x < n)
            out[0] = A[x]
            if written_after:
                x = x + 1
            out[1] = A[x]

    return main


def _read_guards(path, func) -> int:
    return lower(path, func).script().count("T.if_then_else(")


def test_an_assumption_about_a_var_holds_until_the_var_changes():
    """TileLang's rule: ``T.assume`` on a T.alloc_var drops the guard of the reads it proves; a
    write to the variable after the assumption ends the fact (the second read keeps its guard)."""
    assert _read_guards("cuda:sm_80", assumed_var(False)) == 0
    assert _read_guards("cuda:sm_80", assumed_var(True)) == 1


def test_an_assumption_before_a_loop_is_no_fact_about_a_var_the_loop_writes():
    """Iteration 2 reads the ``x`` iteration 1 wrote: the assumption made before the loop is about
    the first value only, so every read in the loop keeps its guard."""
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((4,), "float32"), lo: T.int32):
        with T.Kernel(1, threads=1):
            x = T.alloc_var(T.int32)
            x = lo
            T.assume(x >= 0 and x < n)
            for i in T.serial(4):
                out[i] = A[x]
                x = x + 1

    assert _read_guards("cuda:sm_80", main) == 1
    a = np.arange(1, 4, dtype=np.float32)
    out = np.full(4, np.nan, dtype=np.float32)
    run("cpu", main, A=a, out=out, lo=1)
    np.testing.assert_array_equal(out, [2.0, 3.0, 0.0, 0.0])


@pytest.mark.parametrize("path", PATHS)
def test_a_var_written_after_its_assumption_reads_zero_past_the_end(path):
    a = np.arange(1, 6, dtype=np.float32)
    out = np.full(2, np.nan, dtype=np.float32)
    run(path, assumed_var(True), A=a, out=out, lo=4)
    np.testing.assert_array_equal(out, [5.0, 0.0])


def test_an_assumption_about_a_bound_value_is_a_fact_about_what_it_names():
    """``i = T.min(j + 8, t + 2)`` is ``t + 2`` here, so ``T.assume(i < m)`` also says ``t < m``:
    neither the read of A nor the write of B[t, j] needs a guard (TileLang's complex-indexing case)."""
    m, n = T.dynamic("m"), T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=32):
            t = T.get_thread_binding()
            for j in T.serial(n):
                i = T.min(j + 40, t + 2)
                T.assume(i >= 0 and i < m)
                B[t, j] = A[i, j]

    assert _guards("cuda:sm_80", main) == 0


def test_a_symbolic_index_below_zero_is_skipped():
    """``lo + i`` runs from -2: the author's guard checks only the upper edge, the pass adds the
    lower one (TileLang's rule), so indices -2 and -1 are neither read nor written."""
    x = np.arange(10, dtype=np.float32)

    @T.prim_func
    def main(X: T.Tensor((10,), "float32"), O: T.Tensor((10,), "float32"), lo: T.int32):
        with T.Kernel(1, threads=1):
            for i in T.serial(12):
                if lo + i < 10:
                    O[lo + i] = X[lo + i] + 1.0

    for path in ("cpu", "cuda:sm_80"):
        o = np.zeros_like(x)
        run(path, main, X=x, O=o, lo=-2)
        np.testing.assert_array_equal(o, x + 1)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "metal:apple7"])
def test_a_scatter_through_indices_read_from_memory_skips_the_ones_outside(path):
    """``O[idx[t]] = X[t]`` with indices -1 and past the end among them (a MoE routing table's
    padding): those rows are skipped, the others land."""
    @T.prim_func
    def main(X: T.Tensor((8,), "float32"), Idx: T.Tensor((8,), "int32"), O: T.Tensor((6,), "float32")):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            O[Idx[t]] = X[t] + 0.5

    x = np.arange(8, dtype=np.float32)
    idx = np.array([5, -1, 0, 9, 2, 6, 1, 3], np.int32)
    o = np.full(6, -7.0, np.float32)
    run(path, main, X=x, Idx=idx, O=o)
    expected = np.full(6, -7.0)
    for t, i in enumerate(idx):
        if 0 <= i < 6:
            expected[i] = t + 0.5
    np.testing.assert_array_equal(o, expected)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_an_atomic_target_is_left_to_the_atomic_and_its_value_is_guarded(path):
    """``T.atomic_add(S[0], X[t])`` with 8 threads over a 5-element X: the value's reads past the
    end give 0 (the target element is the atomic's own business)."""
    @T.prim_func
    def main(X: T.Tensor((5,), "float32"), S: T.Tensor((1,), "float32"), n: T.int32):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            T.atomic_add(S[0], X[t + n])

    x = np.arange(1, 6, dtype=np.float32)
    s = np.zeros(1, np.float32)
    run(path, main, X=x, S=s, n=1)
    assert s[0] == x[1:].sum()


@pytest.mark.parametrize("path", PATHS)
def test_a_vector_slice_past_the_edge_is_skipped_whole(path):
    """``O[c:c + 4] = X[c:c + 4]`` per thread over 10 elements: the third vector (8..11) reaches
    past the end, and a vector access is guarded by all its lanes (TileLang's rule), so it is
    neither read nor written; the first two land."""
    @T.prim_func
    def main(X: T.Tensor((10,), "float32"), O: T.Tensor((10,), "float32")):
        with T.Kernel(1, threads=4):
            t = T.get_thread_binding()
            if t < 3:
                O[t * 4:t * 4 + 4] = X[t * 4:t * 4 + 4]

    x = np.arange(1, 11, dtype=np.float32)
    o = np.full(10, -1.0, np.float32)
    run(path, main, X=x, O=o)
    expected = np.full(10, -1.0)
    expected[:8] = x[:8]
    np.testing.assert_array_equal(o, expected)


def test_tilelangs_pass_names_apply_the_same_rules_to_a_module():
    """``tl.transform.LegalizeSafeMemoryAccess()`` and ``LegalizeNegativeIndex()`` (TileLang's pass
    names; the parser already runs both on every kernel) work on an IRModule of a TVMScript
    function that did not come through the parser."""
    import tvm

    import tilelang_core as tl

    @TS.prim_func
    def main(A: TS.Buffer((16,), "float32"), B: TS.Buffer((16,), "float32"), n: TS.int32):
        for i in range(n):
            B[i] = A[-1] + A[i + 1]

    mod = tl.transform.LegalizeNegativeIndex()(tvm.IRModule({"main": main}))
    mod = tl.transform.LegalizeSafeMemoryAccess()(mod)
    text = mod["main"].script()
    assert "A[15]" in text and "A[-1]" not in text
    assert "i < 16" in text and "i + 1 < 16" in text  # the store and the read past the end


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx942"])
def test_a_vectorized_loop_writing_shared_memory_keeps_its_guards_inside(path):
    """A vectorized loop that stages a ragged global tile in shared memory (TileKernels'
    per-channel cast): its versions' ``if`` would depend on the thread, and a barrier between the
    loop's iterations cannot sit under it, so its guards stay in the loop (the kernel compiled,
    instead of "shared memory accessed inside an 'if' whose condition depends on the thread")."""
    rows, cols = 8, 22

    @T.prim_func
    def main(X: T.Tensor((rows, cols), "float32"), O: T.Tensor((cols, rows), "float32")):
        with T.Kernel(T.ceildiv(cols, 16), threads=32) as bx:
            S = T.alloc_shared((rows, 16), "float32")
            tid = T.get_thread_binding()
            c = tid % 4 * 4
            for i in T.serial(rows // 8):
                r = i * 8 + tid // 4
                for j in T.vectorized(4):
                    S[r, c + j] = X[r, bx * 16 + c + j]
            for k in T.serial(rows * 16 // 32):
                e = k * 32 + tid
                if bx * 16 + e % 16 < cols:
                    O[bx * 16 + e % 16, e // 16] = S[e // 16, e % 16]

    bodies = _vector_loops(main)
    assert len(bodies) == 1 and "T.if_then_else" in bodies[0]
    x = np.random.default_rng(5).standard_normal((rows, cols)).astype(np.float32)
    o = np.full((cols, rows), np.nan, np.float32)
    run(path, main, X=x, O=o)
    np.testing.assert_array_equal(o, x.T)
