"""CUDA's paired conversions for vector casts (tilelang_core/simt/transform/vector_casts.py).

Two lanes convert with one CUDA intrinsic (``__float22half2_rn``, ``__half22float2``,
``__float22bfloat162_rn``, ``__bfloat1622float2``) or a helper around cuda_fp8.h's pair
conversions (``__nv_cvt_float2_to_fp8x2``, ``__nv_cvt_fp8x2_to_halfraw2``, ...); a store of 2 or
4 converted lanes is a helper ``tl_cvt_<src>x<n>_to_<dst>x<n>(out, v)`` of one or two pairs. Each gives what the scalar cast TVM prints would give lane by lane: round to nearest
even, and saturation to the largest finite value for fp8 (the ``__nv_fp8_e4m3`` constructors'
``__NV_SATFINITE``). The helpers that fp8 pairs need are named as TileLang names its own
(``__tl_cvt_fp8x2_to_float2``, ...), so source a TileLang user greps reads the same; like every
on-demand helper (intrinsics.ON_DEMAND_HELPERS) they are in the source only where a kernel calls
them. Types are those TVM's printer declares: ``float2``/``float4``, ``half2``/``half4``,
``nv_bfloat162``/``nv_bfloat164``, ``__nv_fp8x2_e4m3``/``__nv_fp8x4_e4m3`` (``.__x`` holds the
bytes).
"""

from __future__ import annotations

_FP8 = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
_SHORT = {"float32": "float", "float16": "half", "bfloat16": "bfloat16", **{k: f"fp8_{v}" for k, v in _FP8.items()}}


def _vector_type(dtype: str, lanes: int) -> str:
    if lanes == 8:  # TVM's spelling of 32 and 16 bytes (fp8: 8 bytes)
        return {"float32": "ulonglong4", "float16": "uint4", "bfloat16": "uint4"}.get(dtype, "uint2")
    if dtype in _FP8:
        return f"__nv_fp8x{lanes}_{_FP8[dtype]}"
    return {"float32": "float", "float16": "half", "bfloat16": "nv_bfloat16"}[dtype] + str(lanes)


def _fn(name: str, ret: str, arg: str, body: str) -> str:
    return f"__device__ __forceinline__ {ret} {name}({arg} v) {{\n{body}}}\n"


def _pairs() -> tuple[dict, dict]:
    """(src, dst) -> name of the 2-lane conversion; name -> its definition (helpers only)."""
    names = {("float32", "float16"): "__float22half2_rn", ("float16", "float32"): "__half22float2",
             ("float32", "bfloat16"): "__float22bfloat162_rn", ("bfloat16", "float32"): "__bfloat1622float2"}
    defs: dict[str, str] = {}

    def overload(name, ret, arg, body):  # one name, several argument types (fp8 kinds)
        defs[name] = defs.get(name, "") + _fn(name, ret, arg, body)

    for dtype, kind in _FP8.items():
        fp8x2, interp = _vector_type(dtype, 2), f"__NV_{kind.upper()}"
        to_half = f"__half2(__nv_cvt_fp8x2_to_halfraw2(v.__x, {interp}))"
        names[(dtype, "float16")] = "__tl_cvt_fp8x2_to_half2"
        overload("__tl_cvt_fp8x2_to_half2", "half2", fp8x2, f"  return {to_half};\n")
        names[(dtype, "float32")] = "__tl_cvt_fp8x2_to_float2"
        overload("__tl_cvt_fp8x2_to_float2", "float2", fp8x2, f"  return __half22float2({to_half});\n")
        names[(dtype, "bfloat16")] = "__tl_cvt_fp8x2_to_bfloat162"  # exact: every fp8 value is a bf16 one
        overload("__tl_cvt_fp8x2_to_bfloat162", "nv_bfloat162", fp8x2,
                 f"  return __float22bfloat162_rn(__half22float2({to_half}));\n")
        for src, arg, base, cvt in (
                ("float32", "float2", "__tl_cvt_float2_to_fp8x2", "__nv_cvt_float2_to_fp8x2(v"),
                ("float16", "half2", "__tl_cvt_half2_to_fp8x2", "__nv_cvt_halfraw2_to_fp8x2(__half2_raw(v)"),
                ("bfloat16", "nv_bfloat162", "__tl_cvt_bfloat162_to_fp8x2",
                 "__nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw(v)")):
            name = f"{base}_{kind}"  # by result kind: C++ cannot overload on the return type
            names[(src, dtype)] = name
            defs[name] = _fn(name, fp8x2, arg, f"  {fp8x2} r;\n  r.__x = {cvt}, __NV_SATFINITE, {interp});\n"
                                                 f"  return r;\n")
    return names, defs


PAIRS, _PAIR_DEFS = _pairs()


_SCALAR = {"float32": "float", "float16": "half", "bfloat16": "nv_bfloat16",
           **{k: f"__nv_fp8_{v}" for k, v in _FP8.items()}}


def _store_name(src: str, dst: str, lanes: int) -> str:
    return f"tl_cvt_{_SHORT[src]}x{lanes}_to_{_SHORT[dst]}x{lanes}"


#: an unsigned type of each store width (bytes): the converted lanes leave in one store
_WORD = {2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}


def _store(src: str, dst: str, lanes: int) -> str:
    """``void f(dst* out, src-vector v)``: the pairs of lanes converted into a word of the whole
    vector's width, stored at once (the vector store the call replaces assumed ``out`` aligned to
    that width; one store per pair was 4 STG.E per 8 lanes where TVM's store is one STG.E.128).
    TVM prints a call returning a vector lane by lane, hence the store inside."""
    s2, sv, d2 = _vector_type(src, 2), _vector_type(src, lanes), _vector_type(dst, 2)
    total = lanes * (1 if dst in _FP8 else 4 if dst == "float32" else 2)
    width = min(total, 16)  # (8 float32 lanes: two 16-byte stores)
    word, words = _WORD[width], total // width
    pair = PAIRS[(src, dst)]
    body = (f"  const {s2}* s = reinterpret_cast<const {s2}*>(&v);\n"
            f"  {word} r[{words}];\n"
            f"  {d2}* d = reinterpret_cast<{d2}*>(r);\n")
    body += "".join(f"  d[{i}] = {pair}(s[{i}]);\n" for i in range(lanes // 2))
    body += "".join(f"  reinterpret_cast<{word}*>(out)[{w}] = r[{w}];\n" for w in range(words))
    return (f"__device__ __forceinline__ void {_store_name(src, dst, lanes)}({_SCALAR[dst]}* out, {sv} v) {{\n"
            f"{body}}}\n")


#: on-demand helper definitions (intrinsics.ON_DEMAND_HELPERS): pairs first, then the stores using them
HELPERS = {**_PAIR_DEFS, **{_store_name(s, d, n): _store(s, d, n) for s, d in PAIRS for n in (2, 4, 8)}}


class CudaVectorCasts:
    """The VectorCasts of the cuda backend: 2, 4 and 8 lanes of the pairs above."""

    name = "cuda"

    def helper(self, src: str, dst: str, lanes: int) -> str | None:
        if (src, dst) not in PAIRS or lanes not in (2, 4, 8):
            return None
        return _store_name(src, dst, lanes)


VECTOR_CASTS = CudaVectorCasts()
