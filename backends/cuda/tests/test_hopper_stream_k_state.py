"""Which pipelined loops stream-K may cut along K, and how a finisher combines the pieces
(hopper/stream_k_state.py): GEMM's sums, FlashAttention's online softmax, and the loops it must
leave whole (numerics of the combine run in tests/gpu)."""

import pytest

import kernels
from test_hopper_lowering import HOPPER_TILES, Target, cuda_source


def _attention(variant, seq_len=1024):
    """B1 H2 D128 attention on 128x128 tiles; at 1024 keys the mask is provably empty."""
    return kernels.make_flash_attention(1, 2, seq_len, 128, 128, 128, 256, variant=variant)


def _state(monkeypatch, func, **options):
    """carried_state of the kernel's pipelined loop, as warp_specialize hands it to stream-K."""
    import tilelang_cuda.hopper.warp_specialize as ws
    from tilelang_cuda.hopper.stream_k_state import carried_state

    seen = []
    original = ws.with_stream_k

    def spy(tiles, mode, declined, before, loop_stmts, after, *rest):
        seen.append(carried_state(before, loop_stmts, after))
        return original(tiles, mode, declined, before, loop_stmts, after, *rest)

    monkeypatch.setattr(ws, "with_stream_k", spy)
    source, kernel = cuda_source(func, **options)
    return seen[0], source, kernel


def test_online_softmax_combines_by_the_row_max(monkeypatch):
    """FlashAttention's loop carries O and the row sum (rescaled by S at their first index) and
    the running max m; the combine reuses the loop's m -> m_prev copy and S statement."""
    (state, why), source, _ = _state(monkeypatch, _attention("online"))
    assert why == "" and sorted(b.name for b in state.sums) == ["acc_o", "logsum"]
    rm = state.row_max
    assert (rm.max.name, rm.prev.name, rm.scale.name) == ("scores_max", "scores_max_prev", "scores_scale")
    assert {b.name: axis for b, axis in rm.axes.items()} == {"acc_o": 0, "logsum": 0}
    assert [b.name for b in state.fragments] == [b.name for b in state.sums] + ["scores_max"]
    assert "(partial softmax states combined by their row maxima, scores_max)" in source


def test_gemm_carries_its_accumulator_only(monkeypatch):
    (state, why), _, _ = _state(monkeypatch, kernels.make_gemm(1000, 520, 264, **HOPPER_TILES))
    assert why == "" and [b.name for b in state.sums] == ["C_f"] and state.row_max is None


@pytest.mark.parametrize("variant,why", [
    ("unscaled_sum", "logsum is written in the loop other than by accumulating gemms and one rescaling by "
                     "scores_scale"),
    ("scale_read_after", "scores_scale is read after the loop"),
    ("counted_sum", "logsum is written in the loop other than by accumulating gemms and one rescaling by "
                    "scores_scale"),
    ("sum_before_exp", "logsum is written in the loop other than by accumulating gemms and one rescaling by "
                       "scores_scale"),
    ("cast_before_exp", "acc_o accumulates acc_s_cast, not exp2(x c - scores_max c) or a copy"),
    ("max_from_zero", "scores_max is a running maximum initialized to 0, not -inf"),
])
def test_loops_that_do_not_combine_keep_whole_tiles(monkeypatch, variant, why):
    """A row sum never rescaled, a rescale factor the epilogue still reads (the combine reuses
    it), a running max that starts at 0, a row sum or a P V whose terms are not the probabilities'
    (a count, the raw scores: pieces would combine them wrongly): each is named, and the kernel
    keeps whole tiles."""
    (state, found), source, kernel = _state(monkeypatch, _attention(variant), enable_stream_k=True)
    assert state is None and found == why
    assert f"no stream-K ({why})" in source and "tl_stream_k" not in kernel


def test_loops_that_mask_by_the_iteration_keep_whole_tiles(monkeypatch):
    """Keys past 1000 masked in the loop: the state combines, but the tail's copy of the loop
    (iterations counted from a piece's start) cost ptxas 328 bytes of spills and serialized
    every wgmma of the kernel (C7512), so the kernel keeps whole tiles and says why."""
    (state, why), source, kernel = _state(monkeypatch, _attention("online", 1000),
                                          enable_stream_k=True)
    assert state is not None and why == ""
    assert "no stream-K (the loop masks by its iteration index)" in source and "tl_stream_k" not in kernel


def test_attention_finisher_rescales_before_it_adds(tmp_path):
    """The writer stores O, l and m after 1024 flag words and O (m and l in row order, each row's
    copies to one place); the
    finisher, after its partner's flag: m_prev = m, m = max(m, partner's), S, O and l rescaled,
    m_prev = partner's m, S again, partner's O and l added rescaled; then the epilogue's
    division and TMA stores. ptxas: no spills."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = _attention("online")
    source, kernel = cuda_source(func, enable_stream_k=True)
    producer, consumers = kernel.split("tl_setmaxnreg_inc<", 1)
    assert "tl_stream_k_publish" not in producer and "tl_stream_k_wait" not in producer
    writer, finisher = consumers.split("tl_stream_k_publish(", 1)
    row = "((((int)threadIdx.x) >> 5) * 16)) + ((((int)threadIdx.x) & 31) >> 2))"
    assert f"{row} + 17536)] = scores_max_ptr[0];" in writer and f"{row} + 17408)] = logsum_ptr[0];" in writer
    at = finisher.index("tl_stream_k_wait(tl_stream_k, tl_sk_partner);")
    m, m_prev, s, l = "scores_max_ptr", "scores_max_prev_ptr", "scores_scale_ptr", "logsum_ptr"
    order = [f"{m_prev}[0] = {m}[0];", f"{m}[0] = max({m}[0], ", f"{s}[0] = tl_exp2(", f"{l}[0] = ({l}[0] * {s}[0]);",
             f"{m_prev}[0] = ((float*)tl_stream_k)[", f"{s}[0] = tl_exp2(", f"{l}[0] = ({l}[0] + (((float*)tl_stream_k)[",
             "tl_tma_store"]
    places = [at]
    for text in order:
        places.append(finisher.index(text, places[-1]))
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(enable_stream_k=True, ptxas_verbose=True)
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    assert "0 bytes spill stores" in backend.last_build.log
