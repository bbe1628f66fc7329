"""TileLang's ``tilelang.cuda.intrinsics`` swizzles (tilelang_core/cuda/intrinsics/layout/mma_layout.py)
as T.Layout: get_swizzle_layout's three-dimensional placement, make_mma_swizzle_layout on shared
buffers, and the XOR bound T.Layout needs to size their outputs."""

import pytest

from tilelang_core.cuda.intrinsics import get_swizzle_layout, make_mma_swizzle_layout
from tilelang_core.errors import FrontendError
from tilelang_core.layout import Layout


@pytest.mark.parametrize("rows,cols,dtype,period", [(32, 64, "float16", 8), (16, 32, "float16", 4),
                                                    (16, 16, "float16", 2), (32, 128, "int8", 8),
                                                    (8, 64, "float32", 8)])
def test_swizzle_keeps_16_byte_vectors_and_permutes_them_by_row(rows, cols, dtype, period):
    per = 128 // {"float16": 16, "int8": 8, "float32": 32}[dtype]
    layout = Layout((rows, cols), lambda i, j: list(get_swizzle_layout(i, j, cols, dtype)))
    assert layout.is_bijective()
    for i in range(rows):
        vectors = set()
        for j in range(0, cols, per):
            group, row, col = get_swizzle_layout(i, j, cols, dtype)
            assert row == i and col % per == 0
            assert [get_swizzle_layout(i, j + e, cols, dtype)[2] for e in range(per)] == list(range(col, col + per))
            assert group == j // (per * period)
            vectors.add((group, col // per))
        # vector v of row i lands at v ^ (i % 8 // (8 // period)) within its group
        assert get_swizzle_layout(i, 0, cols, dtype)[2] // per == (i % 8) // (8 // period)


def test_layout_output_shape_bounds_xor():
    layout = Layout((32, 64), lambda i, j: list(get_swizzle_layout(i, j, 64, "float16")))
    assert layout.output_shape == (1, 32, 64)  # needs the XOR's bound: TVM's analyzer has none


def test_rows_that_are_not_a_multiple_of_32_bytes_are_refused():
    with pytest.raises(FrontendError, match="multiple of 32 bytes"):
        get_swizzle_layout(0, 0, 24, "float16")


def test_make_mma_swizzle_layout_swizzles_64_byte_rows_only():
    from tvm import tirx

    S = tirx.decl_buffer((16, 32), "float16", name="S", scope="shared")
    R = tirx.decl_buffer((16, 8), "float16", name="R", scope="shared")
    swizzled, plain = make_mma_swizzle_layout(S), make_mma_swizzle_layout(R)
    smooth = make_mma_swizzle_layout(S, is_smooth=True)
    assert swizzled.is_bijective() and swizzled.offset(2, 0) != 64  # row 2 XORs its vectors with 1
    assert [plain.offset(i, j) for i in range(2) for j in range(8)] == list(range(16))
    assert smooth.offset(1, 0) == 32
