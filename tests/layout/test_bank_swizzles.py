"""TileLang's bank swizzles (tilelang_core/layout/swizzle.py): every one a permutation of its tile,
at the offsets TileLang's definition gives (atoms of 8 rows x W bytes, atoms along the columns
outermost, the 16-byte chunk XORed with the row), stacked along leading dimensions; shapes they
cannot lay out are refused; SwizzleMode's descriptor fields are PTX's."""

import numpy as np
import pytest
import tvm
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import LayoutError, LoweringError
from tilelang_core.layout import (SwizzleMode, make_full_bank_swizzled_layout, make_half_bank_swizzled_layout,
                                  make_linear_layout, make_quarter_bank_swizzled_layout)
from tilelang_core.layout.swizzle import bank_swizzled_layout
from tilelang_core.testing.oracle import PATHS, run

MAKERS = {128: make_full_bank_swizzled_layout, 64: make_half_bank_swizzled_layout,
          32: make_quarter_bank_swizzled_layout}
BITS = {"float16": 16, "float32": 32, "int8": 8, "float8_e4m3fn": 8}


def shared(shape, dtype):
    return tvm.tirx.decl_buffer(shape, dtype, name="s", scope="shared")


def reference_offset(i, j, rows, width, bits):
    """The definition, spelled out: atom column, atom row, row in the atom, swizzled chunk."""
    vec = 128 // bits
    chunks = width // 16
    atom_cols = vec * chunks
    atom, col = divmod(j, atom_cols)
    chunk, lane = divmod(col, vec)
    row_in_atom = i % 8
    swizzled = chunk ^ (row_in_atom // (8 // chunks))
    return atom * rows * atom_cols + (i // 8) * 8 * atom_cols + row_in_atom * atom_cols + swizzled * vec + lane


@settings(max_examples=30, deadline=None)
@given(width=st.sampled_from([128, 64, 32]), dtype=st.sampled_from(sorted(BITS)),
       row_groups=st.integers(1, 4), atoms=st.integers(1, 3), lead=st.sampled_from([(), (2,), (3, 2)]))
def test_bank_swizzles_are_permutations_at_the_defined_offsets(width, dtype, row_groups, atoms, lead):
    bits = BITS[dtype]
    rows, cols = 8 * row_groups, atoms * (width * 8 // bits)
    layout = MAKERS[width](shared(lead + (rows, cols), dtype))
    assert layout.is_bijective() and layout.kind == f"bank_sw{width}" and layout.align_bytes == width * 8
    tile = rows * cols
    for i in range(rows):
        for j in range(cols):
            idx = (0,) * len(lead)
            assert layout.offset(*idx, i, j) == reference_offset(i, j, rows, width, bits)
    if lead:  # the last tile of the stack
        last = tuple(d - 1 for d in lead)
        n_tiles = 1
        for d in lead:
            n_tiles *= d
        assert layout.offset(*last, rows - 1, 0) == (n_tiles - 1) * tile + reference_offset(rows - 1, 0, rows, width, bits)


def test_full_bank_matches_the_row_swizzle_for_128_byte_rows():
    # the only row width where TileLang's full bank swizzle and make_swizzled_layout coincide
    from tilelang_core.layout import make_swizzled_layout

    buf = shared((16, 64), "float16")
    full, plain = make_full_bank_swizzled_layout(buf), make_swizzled_layout(buf)
    assert all(full.offset(i, j) == plain.offset(i, j) for i in range(16) for j in range(64))


def test_four_row_tiles_take_the_first_half_of_the_period():
    layout = make_full_bank_swizzled_layout(shared((4, 64), "float16"))
    assert layout.is_bijective() and layout.offset(3, 0) == 3 * 64 + 3 * 8


@pytest.mark.parametrize("shape, dtype, match", [
    ((6, 64), "float16", "6 rows"),
    ((8, 32), "float16", "multiple of 64"),  # 64 bytes: not a whole 128-byte atom
    ((16,), "float16", "rank 1"),
])
def test_shapes_a_swizzle_cannot_lay_out_are_refused(shape, dtype, match):
    with pytest.raises(LayoutError, match=match):
        make_full_bank_swizzled_layout(shared(shape, dtype))


def test_linear_layout_and_swizzle_modes():
    assert make_linear_layout(shared((4, 8, 2), "float32")).offset(1, 2, 1) == 1 * 16 + 2 * 2 + 1
    assert [m.wgmma_layout_type() for m in SwizzleMode] == [0, 3, 2, 1]
    assert [m.tcgen05_layout_type() for m in SwizzleMode] == [0, 6, 4, 2]
    assert [m.swizzle_atom_size() for m in SwizzleMode] == [1, 2, 4, 8]
    assert SwizzleMode.of_layout(bank_swizzled_layout(shared((8, 32), "float16"), 64)) is SwizzleMode.SWIZZLE_64B
    assert SwizzleMode.from_ordinal(3) is SwizzleMode.SWIZZLE_128B and SwizzleMode.NONE.is_none()
    assert SwizzleMode.SWIZZLE_128B.smem_alignment() == 1024


def test_annotated_bank_swizzle_keeps_its_kind_in_the_ir():
    @T.prim_func
    def kernel(A: T.Tensor((16, 64), "float16"), B: T.Tensor((16, 64), "float16")):
        with T.Kernel(1, threads=32) as _:
            s = T.alloc_shared((16, 64), "float16")
            T.annotate_layout({s: make_full_bank_swizzled_layout(s)})
            T.copy(A, s)
            T.copy(s, B)

    assert '"bank_sw128"' in kernel.script()


def annotated_gemm(M, N, K, maker_a, maker_b):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((N, K), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.annotate_layout({a: maker_a(a), b: maker_b(b)})
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C)

    return kernel


@pytest.mark.parametrize("maker_a, maker_b", [(make_full_bank_swizzled_layout, make_half_bank_swizzled_layout),
                                              (make_quarter_bank_swizzled_layout, make_full_bank_swizzled_layout)])
@pytest.mark.parametrize("path", PATHS)
def test_gemm_through_bank_swizzled_tiles_matches_numpy(maker_a, maker_b, path):
    if path.startswith("metal"):  # simdgroup_load reads row-major tiles only: an exact layout is refused
        with pytest.raises(LoweringError, match="not row-major"):
            run(path, annotated_gemm(32, 64, 128, maker_a, maker_b), A=None, B=None, C=None)
        return
    check_gemm(path, maker_a, maker_b)


def check_gemm(path, maker_a, maker_b):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 128)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    c = np.full((32, 64), np.nan, np.float32)
    run(path, annotated_gemm(32, 64, 128, maker_a, maker_b), A=a, B=b, C=c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("path", PATHS)
def test_make_swizzled_layout_is_a_request_a_backend_may_replace(path):
    """TileLang's examples annotate gemm operands with make_swizzled_layout; Metal's simdgroup
    gemm reads row-major tiles, so its layout replaces the request instead of refusing the kernel
    (an exact layout, above, is refused). sm_90a's wgmma: backends/cuda/tests/test_swizzle_hints.py."""
    from tilelang_core.layout import make_swizzled_layout

    check_gemm(path, make_swizzled_layout, make_swizzled_layout)
