"""CUDA's paired folds (SimtDialect.paired_folds, tilelang_core/simt/paired_fold.py): two float16
or bfloat16 values folded into a two-lane accumulator with one half2 / bfloat162 instruction.

``tl::add2<abs>(acc, v)``: ``acc[0:2] = acc[0:2] + v[0:2]`` (``|v|`` with ``abs``), and ``max2``,
``min2`` (``__hmax2``/``__hmin2``: a NaN operand loses, like the scalar ``max`` the one-at-a-time
fold prints), ``max2_nan``, ``min2_nan`` (``__hmax2_nan``/``__hmin2_nan``: NaN wins, for
``nan_propagate=True``). The names are TileLang's (``tl::max2`` ...), so a kernel's source reads the
same to a TileLang user; like every on-demand helper they are in the source only where called.
Both pointers are 4-byte aligned (paired_fold.py pairs only even elements of register arrays).
"""

from __future__ import annotations

#: fold -> (helper, the instruction on half2 / nv_bfloat162)
_FOLDS = {"sum": ("add2", "__hadd2"), "max": ("max2", "__hmax2"), "min": ("min2", "__hmin2"),
          "max_nan": ("max2_nan", "__hmax2_nan"), "min_nan": ("min2_nan", "__hmin2_nan")}

#: SimtDialect.paired_folds of the cuda dialect
FOLDS = {fold: f"tl::{name}" for fold, (name, _) in _FOLDS.items()}


def _helper(name: str, instruction: str) -> str:
    overloads = "".join(
        f"template <bool kAbs = false>\n"
        f"__device__ __forceinline__ void {name}({scalar}* acc, const {scalar}* v) {{\n"
        f"  {pair} x = *reinterpret_cast<const {pair}*>(v);\n"
        f"  if (kAbs) x = __habs2(x);\n"
        f"  *reinterpret_cast<{pair}*>(acc) = {instruction}(*reinterpret_cast<{pair}*>(acc), x);\n"
        f"}}\n"
        for scalar, pair in (("half", "half2"), ("nv_bfloat16", "nv_bfloat162")))
    return f"namespace tl {{\n{overloads}}}  // namespace tl\n"


#: name -> definition (intrinsics.ON_DEMAND_HELPERS)
HELPERS = {f"tl::{name}": _helper(name, instruction) for name, instruction in _FOLDS.values()}
