"""Tensor helpers under TileLang's module path ``tilelang.utils.tensor``.

    from tilelang_core.utils.tensor import TensorSupplyType, get_tensor_supply, torch_assert_close

    torch_assert_close(out, ref, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01)

The supply (``TensorSupplyType``, ``get_tensor_supply``) is the profiler's own
(``tilelang_core.profiler.supply``): one implementation behind both paths. Torch is imported inside
the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from ..profiler.supply import TensorSupplyType, get_tensor_supply

_FLOAT8_NAMES = ("float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e8m0fnu")


def is_float8_dtype(dtype) -> bool:
    """True for torch's 8-bit float dtypes (the ones this torch has)."""
    import torch

    return any(getattr(torch, name, None) == dtype for name in _FLOAT8_NAMES)


def close_mask(actual, expected, rtol: float, atol: float, equal_nan: bool = True):
    """``|actual - expected| <= atol + rtol * |expected|`` elementwise (``torch.isclose``: equal
    infinities are close, NaNs only with ``equal_nan``). Bool and integer tensors compare
    exactly-or-within-atol like floats, which ``torch.isclose`` refuses for bools."""
    import torch

    if actual.dtype == torch.bool or expected.dtype == torch.bool:
        actual, expected = actual.to(torch.int64), expected.to(torch.int64)
    return torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _check_attributes(a, b, check_device: bool, check_dtype: bool, check_layout: bool,
                      check_stride: bool) -> None:
    def mismatch(what, x, y):
        raise AssertionError(f"The values for attribute '{what}' do not match: {x} != {y}.")

    if a.shape != b.shape:
        mismatch("shape", a.shape, b.shape)
    if a.is_quantized != b.is_quantized:
        mismatch("is_quantized", a.is_quantized, b.is_quantized)
    if a.is_quantized and a.qscheme() != b.qscheme():
        mismatch("qscheme()", a.qscheme(), b.qscheme())
    if a.layout != b.layout:
        if check_layout:
            mismatch("layout", a.layout, b.layout)
    elif check_stride and a.stride() != b.stride():
        mismatch("stride()", a.stride(), b.stride())
    if check_device and a.device != b.device:
        mismatch("device", a.device, b.device)
    if check_dtype and a.dtype != b.dtype:
        mismatch("dtype", a.dtype, b.dtype)


def _common_form(a, b):
    """Both tensors on one device, in one dtype (unsigned 16-64 bit ints as int64, which torch's
    promotion refuses), strided."""
    import torch

    if a.device != b.device:
        a, b = a.cpu(), b.cpu()
    if a.dtype != b.dtype:
        wide = {torch.uint16, torch.uint32, torch.uint64}
        da = torch.int64 if a.dtype in wide else a.dtype
        db = torch.int64 if b.dtype in wide else b.dtype
        common = torch.promote_types(da, db)
        a, b = a.to(common), b.to(common)
    if a.layout != torch.strided:
        a = a.to_dense()
    if b.layout != torch.strided:
        b = b.to_dense()
    return a, b


def torch_assert_close(tensor_a, tensor_b, rtol: float = 1e-2, atol: float = 1e-3,
                       max_mismatched_ratio: float = 0.001, verbose: bool = False,
                       equal_nan: bool = True, check_device: bool = True, check_dtype: bool = True,
                       check_layout: bool = True, check_stride: bool = False,
                       base_name: str = "LHS", ref_name: str = "RHS") -> bool:
    """Assert that ``tensor_a`` is close to ``tensor_b`` except for at most
    ``int(numel * max_mismatched_ratio)`` elements (TileLang's ``torch_assert_close``).

    An element is close when ``|a - b| <= atol + rtol * |b|`` (``b`` is the reference). Shape
    always has to match; device, dtype and layout too unless their ``check_*`` flag is off (then
    both are brought to a common device and dtype first). Raises AssertionError naming the
    mismatch count, the first mismatching index and the largest errors; returns True otherwise.

        torch_assert_close(c, a @ b, rtol=1e-2, atol=1e-2)
        torch_assert_close(c16, ref32, check_dtype=False, max_mismatched_ratio=0.01)
    """
    import torch

    a = tensor_a if isinstance(tensor_a, torch.Tensor) else torch.as_tensor(tensor_a)
    b = tensor_b if isinstance(tensor_b, torch.Tensor) else torch.as_tensor(tensor_b)
    _check_attributes(a, b, check_device, check_dtype, check_layout, check_stride)
    a, b = _common_form(a, b)
    mismatched = ~close_mask(a, b, rtol, atol, equal_nan)
    count = int(mismatched.sum())
    total = a.numel()
    allowed = int(total * max_mismatched_ratio)
    if verbose:
        print(f"Number of mismatched elements: {count} / {total} (allowed: {allowed})")
    if count <= allowed:
        return True
    wide_a, wide_b = a.double(), b.double()
    flat = int(mismatched.reshape(-1).int().argmax())
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)] if a.dim() else []
    x, y = float(wide_a.reshape(-1)[flat]), float(wide_b.reshape(-1)[flat])
    diff = (wide_a - wide_b).abs()
    rel = diff / (wide_b.abs() + 1e-12)
    raise AssertionError(
        f"Too many mismatched elements: {count} > {allowed} ({max_mismatched_ratio * 100:.2f}% "
        f"allowed, but get {count / max(total, 1) * 100:.2f}%).\n"
        f"First mismatch at index {index}: lhs={x:.6f}, rhs={y:.6f}, abs_diff={abs(x - y):.6f}, "
        f"rel_diff={abs(x - y) / (abs(y) + 1e-12):.6f}\n"
        f"Greatest absolute difference: {float(diff.max())}, Greatest relative difference: "
        f"{float(rel.max())} (rtol={rtol}, atol={atol})\n{base_name}: {tensor_a}\n{ref_name}: {tensor_b}")


__all__ = ["TensorSupplyType", "close_mask", "get_tensor_supply", "is_float8_dtype", "torch_assert_close"]
