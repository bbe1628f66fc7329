"""Kernels the cuda backend tests compile (the frontend reads kernel source from files)."""

import tilelang_core.language as T


def make_gemm(M, N, K, bm=128, bn=128, bk=32, stages=3, threads=128, dtype=T.float16,
              out_dtype=T.float16, trans_b=False, policy=T.GemmWarpPolicy.Square, swizzle=0,
              accum_dtype=T.float32, trans_a=False):
    a_shape = (K, M) if trans_a else (M, K)
    a_tile = (bk, bm) if trans_a else (bm, bk)
    b_shape = (N, K) if trans_b else (K, N)
    b_tile = (bn, bk) if trans_b else (bk, bn)

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            T.use_swizzle(panel_size=max(swizzle, 1), enable=swizzle > 0)
            A_s = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_f = T.alloc_fragment((bm, bn), accum_dtype)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_a:
                    T.copy(A[k * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, k * bk], A_s)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b, policy=policy)
            T.copy(C_f, C[by * bm, bx * bn])

    return gemm


def make_row_max(M, N, bm=64, threads=128):
    """Row-wise max of a tile after a scale: T.Parallel + reduce across threads."""

    @T.prim_func
    def row_max(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            x = T.alloc_fragment((bm, N), T.float32)
            m = T.alloc_fragment((bm,), T.float32)
            T.copy(X[bx * bm, 0], x)
            for i, j in T.Parallel(bm, N):
                x[i, j] = x[i, j] * 2.0
            T.reduce_max(x, m, dim=1)
            T.copy(m, Y[bx * bm])

    return row_max


def make_fp8_copy(M):
    @T.prim_func
    def fp8_copy(X: T.Tensor((M,), T.float8_e4m3), Y: T.Tensor((M,), T.float8_e4m3)):
        with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
            s = T.alloc_shared((128,), T.float8_e4m3)
            T.copy(X[bx * 128], s)
            T.copy(s, Y[bx * 128])

    return fp8_copy


def make_softmax(M, N, bm=32, threads=128):
    """Row softmax of a (M, N) float32 tensor: two reductions and T.Parallel with row statistics."""

    @T.prim_func
    def softmax(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            x = T.alloc_fragment((bm, N), T.float32)
            m = T.alloc_fragment((bm,), T.float32)
            s = T.alloc_fragment((bm,), T.float32)
            T.copy(X[bx * bm, 0], x)
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(bm, N):
                x[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(bm, N):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, Y[bx * bm, 0])

    return softmax


def make_shared_add(M, N, bm=32, bn=64, threads=128):
    """Global -> shared (vectorized, predicated), T.Parallel over shared, shared -> global."""

    @T.prim_func
    def shared_add(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            S = T.alloc_shared((bm, bn), T.float16)
            T.copy(X[by * bm, bx * bn], S)
            for i, j in T.Parallel(bm, bn):
                S[i, j] = S[i, j] + T.float16(1.0)
            T.copy(S, Y[by * bm, bx * bn])

    return shared_add


def make_fill(M, bm=256, threads=128):
    @T.prim_func
    def fill(Y: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            f = T.alloc_fragment((bm,), T.float32)
            T.fill(f, 3.0)
            for i in T.Parallel(bm):
                f[i] = f[i] + T.cast(i, T.float32)
            T.copy(f, Y[bx * bm])

    return fill


def make_atomic_rowsum(M, N, bm=32, threads=128):
    """Every block adds its rows' sums into one accumulator row (tile atomics), and every thread
    adds 1 to Z (a thread-level atomic)."""

    @T.prim_func
    def atomic_rowsum(X: T.Tensor((M, N), T.float32), Y: T.Tensor((N,), T.float32),
                      Z: T.Tensor((1,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            x = T.alloc_fragment((bm, N), T.float32)
            T.copy(X[bx * bm, 0], x)
            for i in T.serial(bm):
                T.atomic_add(Y[0:N], X[bx * bm + i, 0:N])
            T.atomic_add(Z[0], 1.0)

    return atomic_rowsum


def make_gemm_rowmax(M, N, K, bm=64, bn=64, bk=32, threads=128):
    """Row max of a gemm accumulator (attention's pattern): mma layout -> shuffles + shared."""

    @T.prim_func
    def gemm_rowmax(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16),
                    R: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bn, bk), T.float16)
            acc = T.alloc_fragment((bm, bn), T.float32)
            m = T.alloc_fragment((bm,), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[bx * bm, k * bk], A_s)
                T.copy(B[0, k * bk], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                acc[i, j] = acc[i, j] * 0.5
            T.reduce_max(acc, m, dim=1)
            T.copy(m, R[bx * bm])

    return gemm_rowmax


def make_dynamic_gemm(N=256, K=128, bm=64, bn=64, bk=32):
    """M is known only at call time: tiles along M are predicated."""
    m = T.dynamic("m")

    @T.prim_func
    def dyn_gemm(A: T.Tensor((m, K), T.float16), B: T.Tensor((K, N), T.float16),
                 C: T.Tensor((m, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_f = T.alloc_fragment((bm, bn), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return dyn_gemm


def make_flash_attention(B, H, S, D, block_m=64, block_n=64, threads=128, stages=2, variant="online"):
    """FlashAttention forward (non-causal), TileLang's example shape: Q/K/V/O are (B, S, H, D).
    P = softmax numerator goes from one gemm's accumulator to the next gemm's A in registers.
    ``variant`` changes one thing, for what stream-K may cut along the keys: "unscaled_sum" (the
    row sum is never rescaled: not an online softmax), "scale_read_after" (the epilogue reads the
    rescale factor, which the combine reuses), "max_from_zero" (the running max starts at 0),
    "counted_sum" (the row sum adds 1 per iteration, not the probabilities' sum), "sum_before_exp"
    (the row sum of the raw scores, taken before the exponential), "cast_before_exp" (P V's P
    cast from the raw scores)."""
    scale = (1.0 / D) ** 0.5 * 1.44269504  # log2(e): exp2 instead of exp
    shape = (B, S, H, D)
    full_row = T.GemmWarpPolicy.FullRow

    @T.prim_func
    def flash_attn(Q: T.Tensor(shape, T.float16), K: T.Tensor(shape, T.float16),
                   V: T.Tensor(shape, T.float16), Out: T.Tensor(shape, T.float16)):
        with T.Kernel(T.ceildiv(S, block_m), H, B, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((block_m, D), T.float16)
            K_s = T.alloc_shared((block_n, D), T.float16)
            V_s = T.alloc_shared((block_n, D), T.float16)
            acc_s = T.alloc_fragment((block_m, block_n), T.float32)
            acc_s_cast = T.alloc_fragment((block_m, block_n), T.float16)
            acc_o = T.alloc_fragment((block_m, D), T.float32)
            scores_max = T.alloc_fragment((block_m,), T.float32)
            scores_max_prev = T.alloc_fragment((block_m,), T.float32)
            scores_scale = T.alloc_fragment((block_m,), T.float32)
            scores_sum = T.alloc_fragment((block_m,), T.float32)
            logsum = T.alloc_fragment((block_m,), T.float32)
            T.copy(Q[bz, bx * block_m:(bx + 1) * block_m, by, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            if variant == "max_from_zero":
                T.fill(scores_max, 0)
            else:
                T.fill(scores_max, -T.infinity(T.float32))
            for k in T.Pipelined(T.ceildiv(S, block_n), num_stages=stages):
                T.copy(K[bz, k * block_n:(k + 1) * block_n, by, :], K_s)
                T.clear(acc_s)
                T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=full_row)
                for i, j in T.Parallel(block_m, block_n):  # keys past S (ragged last tile) get -inf
                    acc_s[i, j] = T.if_then_else(k * block_n + j < S, acc_s[i, j],
                                                 -T.infinity(T.float32))
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_m):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_m, D):
                    acc_o[i, j] = acc_o[i, j] * scores_scale[i]
                if variant == "sum_before_exp":
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                if variant == "cast_before_exp":
                    T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_m, block_n):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                if variant != "sum_before_exp":
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                if variant == "unscaled_sum":
                    for i in T.Parallel(block_m):
                        logsum[i] = logsum[i] + scores_sum[i]
                elif variant == "counted_sum":
                    for i in T.Parallel(block_m):
                        logsum[i] = logsum[i] * scores_scale[i] + 1.0
                else:
                    for i in T.Parallel(block_m):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                if variant != "cast_before_exp":
                    T.copy(acc_s, acc_s_cast)
                T.copy(V[bz, k * block_n:(k + 1) * block_n, by, :], V_s)
                T.gemm(acc_s_cast, V_s, acc_o, policy=full_row)
            if variant == "scale_read_after":
                for i, j in T.Parallel(block_m, D):
                    acc_o[i, j] = acc_o[i, j] * scores_scale[i] / logsum[i]
            else:
                for i, j in T.Parallel(block_m, D):
                    acc_o[i, j] = acc_o[i, j] / logsum[i]
            T.copy(acc_o, Out[bz, bx * block_m:(bx + 1) * block_m, by, :])

    return flash_attn


def make_gemm_from_registers(second_policy, fp16_accumulators: bool = False):
    """(A @ B) cast to fp16 in registers, then @ C: the second gemm's A never touches shared. With
    ``fp16_accumulators`` both gemms accumulate in fp16 and the first one's accumulator is the
    second's A operand as it is (no cast; FlashAttention's P @ V shape in small)."""
    full_row = T.GemmWarpPolicy.FullRow
    acc = T.float16 if fp16_accumulators else T.float32

    @T.prim_func
    def gemm_chain(A: T.Tensor((64, 32), T.float16), B: T.Tensor((32, 64), T.float16),
                   C: T.Tensor((64, 64), T.float16), Out: T.Tensor((64, 64), acc)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), T.float16)
            B_s = T.alloc_shared((32, 64), T.float16)
            C_s = T.alloc_shared((64, 64), T.float16)
            ab = T.alloc_fragment((64, 64), acc)
            ab_half = ab if fp16_accumulators else T.alloc_fragment((64, 64), T.float16)
            out = T.alloc_fragment((64, 64), acc)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(C, C_s)
            T.gemm(A_s, B_s, ab, clear_accum=True, policy=full_row)
            if not fp16_accumulators:
                T.copy(ab, ab_half)
            T.gemm(ab_half, C_s, out, clear_accum=True, policy=second_policy)
            T.copy(out, Out[bx * 64, 0])

    return gemm_chain


def make_gemm_from_replicated_registers(via_shared: bool, M: int = 64, N1: int = 64, N2: int = 128, K: int = 32):
    """MLA decode's split kernel in small: 256 threads, both gemms FullCol; the second takes A
    (the first's result cast to fp16, through shared memory as TileLang's example writes it, or
    directly) from registers while the two warpgroups split its N: each holds a copy of A."""
    full_col = T.GemmWarpPolicy.FullCol

    @T.prim_func
    def gemm_chain(A: T.Tensor((M, K), T.float16), B: T.Tensor((N1, K), T.float16),
                   C: T.Tensor((N1, N2), T.float16), Out: T.Tensor((M, N2), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N1, K), T.float16)
            C_s = T.alloc_shared((N1, N2), T.float16)
            S_s = T.alloc_shared((M, N1), T.float16)
            ab = T.alloc_fragment((M, N1), T.float32)
            ab_half = T.alloc_fragment((M, N1), T.float16)
            out = T.alloc_fragment((M, N2), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(C, C_s)
            T.gemm(A_s, B_s, ab, transpose_B=True, clear_accum=True, policy=full_col)
            if via_shared:
                T.copy(ab, S_s)
                T.copy(S_s, ab_half)
            else:
                T.copy(ab, ab_half)
            T.gemm(ab_half, C_s, out, clear_accum=True, policy=full_col)
            T.copy(out, Out[bx * M, 0])

    return gemm_chain


def make_two_score_gemms(M: int = 64, N: int = 64, D: int = 128, P: int = 64, steps: int = 3):
    """MLA decode's scores in small: S = Q K^T + Qp Kp^T, two gemms in a row into one accumulator
    (issued as one wgmma batch on sm_90a), summed over ``steps`` tiles of K."""
    full_col = T.GemmWarpPolicy.FullCol

    @T.prim_func
    def scores(Q: T.Tensor((M, D), T.float16), Qp: T.Tensor((M, P), T.float16),
               K: T.Tensor((steps * N, D), T.float16), Kp: T.Tensor((steps * N, P), T.float16),
               Out: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            q = T.alloc_shared((M, D), T.float16)
            qp = T.alloc_shared((M, P), T.float16)
            k = T.alloc_shared((N, D), T.float16)
            kp = T.alloc_shared((N, P), T.float16)
            s = T.alloc_fragment((M, N), T.float32)
            total = T.alloc_fragment((M, N), T.float32)
            T.copy(Q, q)
            T.copy(Qp, qp)
            T.clear(total)
            for t in T.Pipelined(steps, num_stages=1):
                T.copy(K[t * N, 0], k)
                T.copy(Kp[t * N, 0], kp)
                T.gemm(q, k, s, transpose_B=True, clear_accum=True, policy=full_col)
                T.gemm(qp, kp, s, transpose_B=True, policy=full_col)
                for i, j in T.Parallel(M, N):
                    total[i, j] += s[i, j]
            T.copy(total, Out[bx * M, 0])

    return scores


def make_fragment_outside_parallel():
    @T.prim_func
    def stray(Y: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), T.float32)
            T.fill(f, 1.0)
            f[0] = 2.0
            T.copy(f, Y[bx * 128])

    return stray


def make_partial_fragment_copy():
    @T.prim_func
    def partial(Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), T.float32)
            T.fill(f, 1.0)
            T.copy(f[0:64], Y[0:64])

    return partial


def make_annotated_shared(M=64, N=64):
    """A shared tile stored column-major through T.annotate_layout."""
    from tilelang_core.layout import make_swizzled_layout

    @T.prim_func
    def annotated(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((M, N), T.float16)
            W = T.alloc_shared((M, N), T.float16)
            T.annotate_layout({S: lambda i, j: j * M + i, W: make_swizzled_layout(M, N, 16)})
            T.copy(X, S)
            for i, j in T.Parallel(M, N):
                W[i, j] = S[i, j] * T.float16(2.0)
            T.copy(W, Y[bx * M, 0])

    return annotated


def make_cumsum(M, N, dim=1, reverse=False, threads=128):
    @T.prim_func
    def cumsum(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            S = T.alloc_shared((M, N), T.float32)
            T.copy(X, S)
            T.cumsum(S, dim=dim, reverse=reverse)
            T.copy(S, Y[bx * M, 0])

    return cumsum


def make_gemm_shared_epilogue(M, N, K, bm=64, bn=64, bk=32):
    """The accumulator goes out through shared memory (fragment -> shared -> 16-byte stores)."""

    @T.prim_func
    def gemm_smem_out(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16),
                      C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_s = T.alloc_shared((bm, bn), T.float16)
            C_f = T.alloc_fragment((bm, bn), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C_s)
            T.copy(C_s, C[by * bm, bx * bn])

    return gemm_smem_out


def make_gemm_colsum(M=64, N=64, K=32):
    """Column sums of a gemm accumulator: a reduction along dim 0 of the mma layout."""

    @T.prim_func
    def gemm_colsum(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16),
                    R: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((K, N), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            col = T.alloc_fragment((N,), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True)
            T.reduce_sum(acc, col, dim=0)
            T.copy(col, R[bx * N])

    return gemm_colsum


# TileLang-style kernels: elementwise, norms, fused epilogues, per-thread scalars

def make_elementwise_add(M, N, bm=32, bn=64):
    @T.prim_func
    def add(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                if by * bm + i < M and bx * bn + j < N:
                    C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + B[by * bm + i, bx * bn + j]
    return add



def make_rms_norm(M, N, bm=4):
    @T.prim_func
    def rms(A: T.Tensor((M, N), T.float32), W: T.Tensor((N,), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            a = T.alloc_fragment((bm, N), T.float32)
            sq = T.alloc_fragment((bm, N), T.float32)
            s = T.alloc_fragment((bm,), T.float32)
            T.copy(A[bx * bm, 0], a)
            for i, j in T.Parallel(bm, N):
                sq[i, j] = a[i, j] * a[i, j]
            T.reduce_sum(sq, s, dim=1)
            for i in T.Parallel(bm):
                s[i] = T.rsqrt(s[i] / N + 1e-6)
            for i, j in T.Parallel(bm, N):
                a[i, j] = a[i, j] * s[i] * W[j]
            T.copy(a, B[bx * bm, 0])
    return rms



def make_matmul_bias_relu(M, N, K, bm=64, bn=64, bk=32):
    @T.prim_func
    def mm(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), bias: T.Tensor((N,), T.float32),
           C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_f = T.alloc_fragment((bm, bn), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(bm, bn):
                C_f[i, j] = T.max(C_f[i, j] + bias[bx * bn + j], 0.0)
            T.copy(C_f, C[by * bm, bx * bn])
    return mm



def make_row_sum(M, N, bm=16):
    @T.prim_func
    def rs(A: T.Tensor((M, N), T.float16), out: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=64) as bx:
            a = T.alloc_fragment((bm, N), T.float32)
            s = T.alloc_fragment((bm,), T.float32)
            T.copy(A[bx * bm, 0], a)
            T.reduce_sum(a, s, dim=1)
            T.copy(s, out[bx * bm])
    return rs



def make_local_var_loop(N):
    @T.prim_func
    def lv(A: T.Tensor((N,), T.float32), out: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            acc = T.alloc_var(T.float32, 0.0)
            tx = T.get_thread_binding()
            for k in T.serial(4):
                acc += A[bx * 128 + tx] * k
            out[bx * 128 + tx] = acc
    return lv


def make_stage_buffer_used_after_loop():
    @T.prim_func
    def stale(A: T.Tensor((128, 32), T.float16), Out: T.Tensor((32, 32), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((32, 32), T.float16)
            acc = T.alloc_fragment((32, 32), T.float32)
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[k * 32, 0], A_s)
                T.gemm(A_s, A_s, acc)
            T.copy(A_s, Out[bx * 32, 0])

    return stale


def make_gemm_div(M, N, K, bm=128, bn=256, bk=64, stages=3, threads=256):
    """C = (A @ B) / d[None, :] in the epilogue of a warp-specialized gemm: d may hold zeros, the
    division then takes its IEEE slow path (a subroutine call in the SASS) in the consumer warps."""

    @T.prim_func
    def gemm_div(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), D: T.Tensor((N,), T.float32),
                 C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_f = T.alloc_fragment((bm, bn), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(bm, bn):
                C_f[i, j] = C_f[i, j] / D[bx * bn + j]
            T.copy(C_f, C[by * bm, bx * bn])

    return gemm_div


def make_register_a_gemm(M, N, K, dtype, accum, policy, threads=128):
    """C = A @ B with A loaded into a fragment by a T.Parallel loop and fed to the gemm from
    registers (TileLang's mhc_pre with tf32, its w4a8 dequantized GEMM with int8): the fragment
    takes the gemm's A-operand layout, replicated over the warps that split C's columns."""
    @T.prim_func
    def reg_a(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(1, threads=threads):
            B_s = T.alloc_shared((K, N), dtype)
            a = T.alloc_fragment((M, K), dtype)
            c = T.alloc_fragment((M, N), accum)
            T.copy(B, B_s)
            for i, j in T.Parallel(M, K):
                a[i, j] = A[i, j]
            T.clear(c)
            T.gemm(a, B_s, c, policy=policy)
            T.copy(c, C)

    return reg_a


TWICE_SOURCE = """
__device__ void user_twice(const float* src, float* dst, int n) {
  for (int i = 0; i < n; ++i) dst[i] = 2.0f * src[i];
}
"""


def make_imported_source(prelude: bool):
    """TileLang's dequantize examples' pattern: device source brought in with T.import_source (or
    T.Kernel(prelude=...)), called through T.call_extern on T.access_ptr of per-thread arrays."""
    @T.prim_func
    def imported(A: T.Tensor((128 * 4,), T.float32), B: T.Tensor((128 * 4,), T.float32)):
        with T.Kernel(1, threads=128, prelude=TWICE_SOURCE if prelude else None):
            if not prelude:
                T.import_source(TWICE_SOURCE)
            tx = T.get_thread_binding()
            src = T.alloc_local((4,), T.float32)
            dst = T.alloc_local((4,), T.float32)
            for v in T.serial(4):
                src[v] = A[tx * 4 + v]
            T.call_extern("user_twice", T.access_ptr(src, "r"), T.access_ptr(dst, "w"), 4, dtype=T.float32)
            for v in T.serial(4):
                B[tx * 4 + v] = dst[v]

    return imported
