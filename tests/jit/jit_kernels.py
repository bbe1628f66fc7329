"""PrimFuncs the JIT tests compile (TVMScript, so they need real source files)."""

from tvm.script import tirx as T


@T.prim_func
def vadd(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"global_symbol": "vadd"})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float64")
    B = T.match_buffer(b, (n,), "float64")
    C = T.match_buffer(c, (n,), "float64")
    for i in range(n):
        C[i] = A[i] + B[i]


@T.prim_func
def vsub(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"global_symbol": "vsub"})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float64")
    B = T.match_buffer(b, (n,), "float64")
    C = T.match_buffer(c, (n,), "float64")
    for i in range(n):
        C[i] = A[i] - B[i]


@T.prim_func
def matmul_static(A: T.Buffer((16, 8), "float64"), B: T.Buffer((8, 4), "float64"),
                  C: T.Buffer((16, 4), "float64")):
    T.func_attr({"global_symbol": "matmul_static"})
    for i, j in T.grid(16, 4):
        C[i, j] = T.float64(0)
        for k in range(8):
            C[i, j] = C[i, j] + A[i, k] * B[k, j]


@T.prim_func
def scale_rows(a: T.handle, s: T.handle, c: T.handle, alpha: T.float64):
    """C[m, n] = A[m, n] * S[m] * alpha: two symbolic extents shared by three buffers."""
    T.func_attr({"global_symbol": "scale_rows"})
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m, n), "float64")
    S = T.match_buffer(s, (m,), "float64")
    C = T.match_buffer(c, (m, n), "float64")
    for i, j in T.grid(m, n):
        C[i, j] = A[i, j] * S[i] * alpha


@T.prim_func
def split_sum(a: T.handle, w: T.handle, lo: T.handle, hi: T.handle):
    """Two outputs: the halves of A (length 2n, a derived extent) plus W."""
    T.func_attr({"global_symbol": "split_sum"})
    n = T.int32()
    A = T.match_buffer(a, (n * 2,), "float32")
    W = T.match_buffer(w, (n,), "float32")
    LO = T.match_buffer(lo, (n,), "float32")
    HI = T.match_buffer(hi, (n,), "float32")
    for i in range(n):
        LO[i] = A[i] + W[i]
        HI[i] = A[i + n] + W[i]


@T.prim_func
def halves(a: T.handle, lo: T.handle):
    """An output whose extent n no input states on its own (A has n * 2)."""
    T.func_attr({"global_symbol": "halves"})
    n = T.int32()
    A = T.match_buffer(a, (n * 2,), "float32")
    LO = T.match_buffer(lo, (n,), "float32")
    for i in range(n):
        LO[i] = A[i]


@T.prim_func
def int_copy(a: T.handle, b: T.handle):
    T.func_attr({"global_symbol": "int_copy"})
    n = T.int32()
    A = T.match_buffer(a, (n,), "int32")
    B = T.match_buffer(b, (n,), "int32")
    for i in range(n):
        B[i] = A[i] * 2


def make_scale(n, factor):
    """A lazy-style factory: compile-time n and factor baked into the PrimFunc."""

    @T.prim_func
    def scale(A: T.Buffer((n,), "float64"), B: T.Buffer((n,), "float64")):
        T.func_attr({"global_symbol": "scale"})
        for i in range(n):
            B[i] = A[i] * T.float64(factor)

    return scale


@T.prim_func
def fill_one(a: T.handle):
    # a single tensor, no outputs: the launcher's fast path has nothing to check (TileLang's
    # infinity test; its launcher was once an `if` with an empty body)
    A = T.match_buffer(a, (32,), "float32")
    for i in range(32):
        A[i] = T.float32(1)
