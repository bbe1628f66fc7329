"""The cuda definitions of the SIMT kit's warp helpers (votes, shuffles, warp reductions, bit
scans, ``__ldg``; contract in tilelang_core/simt/__init__.py), each CUDA's own intrinsic.

They are on-demand helpers (intrinsics.ON_DEMAND_HELPERS): a kernel's source gets only the ones
it calls. Each entry is self-contained (the on-demand pass looks for calls in the kernels, not
in other helpers). The kit passes lane masks as 64 bits (AMD waves have 64 lanes); a CUDA warp
has 32, so the helpers narrow them.
"""

from __future__ import annotations

_D = "__device__ __forceinline__"


def _vote(name: str, builtin: str, result: str) -> str:
    return (f"{_D} {result} {name}(unsigned long long lanes, bool pred) {{\n"
            f"  return {builtin}((unsigned)lanes, pred);\n}}\n")


def _reduce(kind: str, combine: str, extra: str = "") -> str:
    return (extra + f"template <typename T>\n{_D} T tl_warp_reduce_{kind}(T v) {{\n"
            f"  for (int offset = 16; offset > 0; offset >>= 1) {{\n"
            f"    T other = __shfl_xor_sync(0xffffffffu, v, offset);\n"
            f"    v = {combine};\n  }}\n  return v;\n}}\n")


def _minmax(name: str, pick: str, fn: str, hfn: str) -> str:
    """Pairwise max/min: NaN-ignoring for floats (fmaxf, __hmax), a compare for integers."""
    return (f"template <typename T> {_D} T {name}(T a, T b) {{ return {pick}; }}\n"
            f"{_D} float {name}(float a, float b) {{ return {fn}f(a, b); }}\n"
            f"{_D} double {name}(double a, double b) {{ return {fn}(a, b); }}\n"
            f"{_D} half {name}(half a, half b) {{ return {hfn}(a, b); }}\n"
            f"{_D} __nv_bfloat16 {name}(__nv_bfloat16 a, __nv_bfloat16 b) {{ return {hfn}(a, b); }}\n")


def _rng_state(generator: str) -> str:
    """T.rng_init and the draws (language/random.py): the thread's cuRAND state, declared once at
    the top of the kernel by ``TL_RNG_STATE_<generator>()``, and the calls on it."""
    return ("#include <curand_kernel.h>\n"
            f"#define TL_RNG_STATE_{generator}() {generator} tl_rng_state\n"
            "#define tl_rng_init(seed, seq, off) curand_init((seed), (seq), (off), &tl_rng_state)\n"
            "#define tl_rng_rand() curand(&tl_rng_state)\n"
            "#define tl_rng_uniform() curand_uniform(&tl_rng_state)\n"
            "#define tl_rng_uniform_double() curand_uniform_double(&tl_rng_state)\n"
            "#define tl_rng_normal() curand_normal(&tl_rng_state)\n"
            "#define tl_rng_normal_double() curand_normal_double(&tl_rng_state)\n")


_WHERE = "msg='%s' BlockIdx=(%d, %d, %d), ThreadIdx=(%d, %d, %d)"
_WHERE_ARGS = "const char* msg, int bx, int by, int bz, int tx, int ty, int tz"


def _print_helpers() -> dict:
    """``tl_print_msg`` for a message alone, ``tl_print_<kind>`` for a value (a buffer's element
    where ``buf`` is not empty) of each kind the lowering widens to: one name each, since TVM may
    narrow the widening cast of a value that fits (an overload would then be ambiguous)."""
    out = {"tl_print_msg": (f"{_D} void tl_print_msg({_WHERE_ARGS}) {{\n"
                            f"  printf(\"{_WHERE}\\n\", msg, bx, by, bz, tx, ty, tz);\n}}\n")}
    for kind, ctype, fmt, arg in (("int", "long long", "%lld", "v"), ("uint", "unsigned long long", "%llu", "v"),
                                  ("float", "double", "%.9g", "v"), ("bool", "bool", "%s", 'v ? "true" : "false"')):
        out[f"tl_print_{kind}"] = (
            f"{_D} void tl_print_{kind}({_WHERE_ARGS}, const char* dtype, {ctype} v, const char* buf, int index) {{\n"
            f"  if (buf[0]) printf(\"{_WHERE}: buffer=%s, index=%d, dtype=%s value={fmt}\\n\", msg, bx, by, bz, "
            f"tx, ty, tz, buf, index, dtype, {arg});\n"
            f"  else printf(\"{_WHERE}: dtype=%s value={fmt}\\n\", msg, bx, by, bz, tx, ty, tz, dtype, {arg});\n}}\n")
    return out


RNG_HELPERS = {f"TL_RNG_STATE_{g}": _rng_state(g) for g in
               ("curandStateMRG32k3a_t", "curandStatePhilox4_32_10_t", "curandStateXORWOW_t")}

WARP_HELPERS = {
    # T.device_assert: print where and why, then stop the kernel (the launch fails, as assert's)
    "tl_device_assert": (f"{_D} void tl_device_assert(bool ok, const char* msg) {{\n"
                         f"  if (!ok) {{\n"
                         f"    printf(\"T.device_assert failed in block (%d, %d, %d), thread %d: %s\\n\",\n"
                         f"           blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, msg);\n"
                         f"    __trap();\n  }}\n}}\n"),
    # T.print (language/debug_print.py): one printf per line (lines of different threads do not mix)
    **_print_helpers(),
    "tl_any_sync": _vote("tl_any_sync", "__any_sync", "int"),
    "tl_all_sync": _vote("tl_all_sync", "__all_sync", "int"),
    # __ballot_sync's 32 bits, zero-extended (TileLang's uint64 ballot)
    "tl_ballot_sync": _vote("tl_ballot_sync", "__ballot_sync", "unsigned long long"),
    "tl_activemask": f"{_D} unsigned long long tl_activemask() {{ return __activemask(); }}\n",
    "tl_match_any_sync": (f"template <typename T>\n{_D} unsigned tl_match_any_sync(unsigned long long lanes, T v) {{\n"
                          f"  return __match_any_sync((unsigned)lanes, v);\n}}\n"),
    "tl_match_all_sync": (f"template <typename T>\n{_D} unsigned tl_match_all_sync(unsigned long long lanes, T v) {{\n"
                          f"  int same;\n  return __match_all_sync((unsigned)lanes, v, &same);\n}}\n"),
    # the kit computes the source lane of every shuffle form (width, up/down, xor groups)
    "tl_shfl_sync": (f"template <typename T>\n{_D} T tl_shfl_sync(unsigned long long lanes, T v, int src_lane) {{\n"
                     f"  return __shfl_sync((unsigned)lanes, v, src_lane);\n}}\n"),
    "tl_warp_reduce_sum": _reduce("sum", "v + other"),
    "tl_warp_reduce_max": _reduce("max", "tl_lane_max(v, other)", _minmax("tl_lane_max", "a < b ? b : a", "fmax",
                                                                            "__hmax")),
    "tl_warp_reduce_min": _reduce("min", "tl_lane_min(v, other)", _minmax("tl_lane_min", "b < a ? b : a", "fmin",
                                                                            "__hmin")),
    "tl_warp_reduce_bitand": _reduce("bitand", "v & other"),
    "tl_warp_reduce_bitor": _reduce("bitor", "v | other"),
    "tl_sync_warp": f"{_D} void tl_sync_warp(unsigned long long lanes) {{ __syncwarp((unsigned)lanes); }}\n",
    # T.sync_threads(id, count): a barrier among the count threads (whole warps) that reach it
    "tl_named_barrier": (f"{_D} void tl_named_barrier(int id, int count) {{\n"
                         f"  asm volatile(\"bar.sync %0, %1;\" :: \"r\"(id), \"r\"(count) : \"memory\");\n}}\n"),
    # true on the lowest lane of the warp that executes it (T.shuffle_elect's elect_one_sync)
    "tl_elect_one_sync": (f"{_D} bool tl_elect_one_sync() {{\n"
                          f"  unsigned lane;\n  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n"
                          f"  return lane == (unsigned)(__ffs(__activemask()) - 1);\n}}\n"),
    "tl_syncthreads_count": f"{_D} int tl_syncthreads_count(bool pred) {{ return __syncthreads_count(pred); }}\n",
    "tl_syncthreads_and": f"{_D} int tl_syncthreads_and(bool pred) {{ return __syncthreads_and(pred); }}\n",
    "tl_syncthreads_or": f"{_D} int tl_syncthreads_or(bool pred) {{ return __syncthreads_or(pred); }}\n",
    "tl_ffs": (f"{_D} int tl_ffs(int v) {{ return __ffs(v); }}\n"
               f"{_D} int tl_ffs(unsigned v) {{ return __ffs((int)v); }}\n"
               f"{_D} int tl_ffs(long v) {{ return __ffsll((long long)v); }}\n"
               f"{_D} int tl_ffs(unsigned long v) {{ return __ffsll((long long)v); }}\n"
               f"{_D} int tl_ffs(long long v) {{ return __ffsll(v); }}\n"
               f"{_D} int tl_ffs(unsigned long long v) {{ return __ffsll((long long)v); }}\n"),
    "tl_fns": (f"{_D} unsigned tl_fns(unsigned mask, unsigned base, int offset) {{\n"
               f"  return __fns(mask, base, offset);\n}}\n"),
    # ld.global.nc: the read-only data cache (the kit uses it only for tensors the kernel never writes)
    "tl_ldg": (f"template <typename T>\n{_D} T tl_ldg(const T* p) {{ return __ldg(p); }}\n"
               f"{_D} bool tl_ldg(const bool* p) {{ return *p; }}\n"),
}

__all__ = ["WARP_HELPERS"]
