"""A T.Parallel nest that stores a thread's run of registers into a swizzled shared tile stores it
as one vector (the swizzle permutes whole 16-byte chunks, so an aligned run of a row stays side
by side), as TileKernels' quantizing casts do (``out_shared[i, j] = x[i, j] * inv[i, j // 128]``
into a float8 tile: 8 or 16 st.shared.u8 a run before). A row index that is constant over a run
(``(lo * 4 + vi) // 8``) does not stop it; a shared layout that splits a row's runs (an annotated
transpose) keeps element stores. Numerics on every reference path against numpy."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, lower, run

ROWS, COLS, RUN, THREADS = 4, 256, 8, 128


def runs_of_eight(i, j):
    """Each thread holds runs of RUN consecutive columns (TileKernels' per-token cast layout)."""
    e = i * COLS + j
    return e // RUN % THREADS, e // (RUN * THREADS) * RUN + e % RUN


def scaled_store(dtype="int8", transposed=False):
    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), S: T.Tensor((ROWS, COLS // 64), "float32"),
             O: T.Tensor((ROWS, COLS), dtype)):
        with T.Kernel(1, threads=THREADS):
            x = T.alloc_fragment((ROWS, COLS), "float32")
            o = T.alloc_shared((ROWS, COLS), dtype)
            T.annotate_layout({x: T.Fragment((ROWS, COLS), forward_fn=runs_of_eight)})
            if transposed:
                T.annotate_layout({o: T.Layout((ROWS, COLS), lambda i, j: j * ROWS + i)})
            T.copy(X, x)
            for i, j in T.Parallel(ROWS, COLS):
                o[i, j] = T.clamp(x[i, j] * S[i, j // 64], -100.0, 100.0)
            T.copy(o, O)

    return main


def expected(x, s, dtype):
    y = np.clip(x.astype(np.float32) * np.repeat(s, 64, axis=1), -100, 100)
    return y.astype(np.int8) if dtype == "int8" else y.astype(np.float16)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["int8", "float16"])
@pytest.mark.parametrize("transposed", [False, True])
def test_a_scaled_store_into_shared_is_right(path, dtype, transposed):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((ROWS, COLS)) * 20).astype(np.float32)
    s = rng.random((ROWS, COLS // 64)).astype(np.float32) + 0.5
    out = run(path, scaled_store(dtype, transposed), X=x, S=s, O=np.zeros((ROWS, COLS), dtype))["O"]
    np.testing.assert_array_equal(out, expected(x, s, dtype))


def _shared_stores(text: str) -> list[str]:
    return [line for line in text.splitlines() if "smem_" in line.split("=")[0] and "] =" in line]


def test_shared_stores_of_a_run_are_element_by_element():
    text = lower("cuda:sm_90a", scaled_store("int8", transposed=True)).script()
    assert not any("vi]" in line for line in _shared_stores(text))


def bound_scale():
    """A value bound from registers inside the loop (``factor = sc[i] * 0.5``, as TileKernels'
    ``factor = x_sf[..] * sf_inv[..]``)."""
    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), S: T.Tensor((ROWS,), "float32"),
             O: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=THREADS):
            x = T.alloc_fragment((ROWS, COLS), "float32")
            sc = T.alloc_fragment((ROWS,), "float32")
            T.annotate_layout({x: T.Fragment((ROWS, COLS), forward_fn=runs_of_eight)})
            T.copy(X, x)
            T.copy(S, sc)
            for i, j in T.Parallel(ROWS, COLS):
                factor = sc[i] * 0.5
                O[i, j] = x[i, j] * factor

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_value_bound_from_registers_scales_each_element(path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    s = rng.standard_normal(ROWS).astype(np.float32)
    out = run(path, bound_scale(), X=x, S=s, O=np.zeros((ROWS, COLS), np.float32))["O"]
    np.testing.assert_array_equal(out, x * (s[:, None] * np.float32(0.5)))


def register_max():
    """Each thread folds its run of 8 elements into one register of a per-thread array (a vector
    store there, ``m[(lo * 4 + vi) // 8]``, would have every lane write that register: never one)."""
    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), O: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=THREADS):
            x = T.alloc_fragment((ROWS, COLS), "float32")
            m = T.alloc_local((4,), "float32")
            T.annotate_layout({x: T.Fragment((ROWS, COLS), forward_fn=runs_of_eight)})
            T.copy(X, x)
            for k in T.serial(4):
                m[k] = -1e30
            for i, j in T.Parallel(ROWS, COLS):
                m[(i * COLS + j) // 1024] = T.max(m[(i * COLS + j) // 1024], x[i, j])
            for i, j in T.Parallel(ROWS, COLS):
                O[i, j] = x[i, j] - m[(i * COLS + j) // 1024]

    return main


@pytest.mark.parametrize("path", PATHS[1:])
def test_a_register_fold_covers_each_threads_own_iterations(path):
    x = np.random.default_rng(6).standard_normal((ROWS, COLS)).astype(np.float32)
    out = run(path, register_max(), X=x, O=np.zeros((ROWS, COLS), np.float32))["O"]
    runs = x.reshape(-1, RUN)  # a thread's 8 elements: one run (ROWS * COLS < 1024: one register)
    np.testing.assert_array_equal(out, (runs - runs.max(-1, keepdims=True)).reshape(ROWS, COLS))


def test_the_cpu_backend_refuses_a_register_carried_across_iterations():
    """The cpu backend runs the loop whole with one copy of ``m``: it would fold every element
    (it did, silently); refused, naming the register."""
    import tilelang_core as tilelang
    from tilelang_core import LoweringError

    with pytest.raises(LoweringError, match="updates register 'm' from one iteration to the next"):
        tilelang.compile(register_max(), target="cpu")
