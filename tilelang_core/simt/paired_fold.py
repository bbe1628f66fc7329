"""Register reductions of 16-bit floats two values at a time (SimtDialect.paired_folds).

A thread folding float16 or bfloat16 registers one at a time spends an instruction per value;
CUDA's half2 instructions (``__hadd2``, ``__hmax2``, ...) fold two. Two shapes of a per-thread fold
pair up without moving data:

- *lanes*: values ``v[2i]`` and ``v[2i + 1]`` fold into the same output. A two-lane accumulator
  takes the pairs, and its lanes are combined once at the end (a row max over a thread's
  registers, ``T.reduce_max(x_local, m, dim=1)``).
- *outputs*: values ``v[2i]`` and ``v[2i + 1]`` fold into adjacent outputs ``r`` and ``r + 1``
  (``r`` even). The outputs are the accumulator (a column reduction over rows held in one thread).

Either way both pointers the helper gets are 4-byte aligned: register arrays are declared
``alignas(64)`` and every pair starts at an even element. Anything else folds one value at a time,
as before. A sum folded in lanes adds in another order than one value after another (two running
sums): the same values up to float16/bfloat16 rounding, as TileLang's packed reductions.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.ir import region as R

from .staging import size, unflatten
from .transform.state import loop, seq

#: reduction kind -> the fold its pairs use (abs kinds take |v|: the helper's ``<true>``)
_FOLDS = {"sum": "sum", "abssum": "sum", "max": "max", "absmax": "max", "min": "min"}
PAIRED_DTYPES = ("float16", "bfloat16")


def paired_helper(dialect, kind: str, nan_propagate: bool, acc_dt: str, src_dt: str) -> str | None:
    """The helper (with its ``<true>`` for |v|) that folds two values of this reduction, or None."""
    fold = _FOLDS.get(kind)
    if fold is None or acc_dt != src_dt or acc_dt not in PAIRED_DTYPES:
        return None
    if nan_propagate and fold != "sum":  # (an addition propagates NaN by itself)
        fold += "_nan"
    name = dialect.paired_folds.get(fold)
    if name is None:
        return None
    return name + "<true>" if kind.startswith("abs") else name


def fold_pair(helper: str, acc, src):
    """``acc[0:2] = op(acc[0:2], src[0:2])``; ``acc`` and ``src`` are the first elements' loads."""
    return tirx.Evaluate(tirx.call_extern("void", helper, tirx.address_of(acc), tirx.address_of(src)))


def register_pairing(outputs: list) -> str | None:
    """How a fold of values 0..n-1 into outputs ``outputs[l]`` (constants) pairs up: "lanes",
    "outputs" (module doc), or None where neither holds for every even ``l``."""
    n = len(outputs)
    if n < 2 or n % 2 or any(r is None for r in outputs):
        return None
    pairs = [(outputs[l], outputs[l + 1]) for l in range(0, n, 2)]
    if all(a == b for a, b in pairs):
        return "lanes"
    if all(b == a + 1 and a % 2 == 0 for a, b in pairs):
        return "outputs"
    return None


def _even(e) -> bool:
    value = R.as_int(e)
    return value is not None and value % 2 == 0


def per_thread_pairing(op) -> str | None:
    """The pairing of a reduction of a per-thread tile (T.alloc_local) folded by its own thread:
    "lanes" when ``dim`` is the tile's last (contiguous) axis, "outputs" when the lines of adjacent
    outputs are adjacent along it; None where the tile's rows or the region's start are odd (a pair
    would straddle a 4-byte boundary) or there is nothing to pair."""
    shape = [R.as_int(e) for e in op.src.source.ty.shape]
    region = op.src.region
    last = len(shape) - 1
    if None in shape:
        return None
    if shape[last] % 2:  # rows start at odd elements: only a single line, at an even one, pairs
        start, stride = 0, 1
        for d in reversed(range(len(shape))):
            start, stride = start + (R.as_int(region[d].min) or 0) * stride, stride * shape[d]
        if any(R.as_int(r.extent) != 1 for r in region[:last]) or None in [R.as_int(r.min) for r in region] \
                or start % 2:
            return None
    elif not _even(region[last].min):
        return None
    extent = R.as_int(region[last].extent)
    if extent is None or extent < 2:
        return None
    if op.dim == last:
        return "lanes"
    return "outputs" if extent % 2 == 0 else None


def fold_per_thread(op, st, helper: str, pairing: str, identity, combine, store_result):
    """Each thread folds its own copy of ``op.src``, every output, two values at a time
    (lower_reduce_shared.py's per-thread path); ``store_result(kept, value)`` writes one output."""
    acc_dt = str(op.dst.source.ty.dtype)
    src_ext = [R.as_int(r.extent) for r in op.src.region]
    out_ext = [e for d, e in enumerate(src_ext) if d != op.dim]
    acc = st.alloc(f"{op.dst.source.name}_red_pair", (2,), acc_dt, "local")
    start = [tirx.BufferStore(acc, identity(op.kind, acc_dt), [i]) for i in (0, 1)]

    def at(kept, k):
        index = kept[:op.dim] + [k] + kept[op.dim:]
        return [r.min + i for r, i in zip(op.src.region, index)]

    def element(index):
        return tirx.BufferLoad(op.src.source, index)

    n = src_ext[op.dim]
    if pairing == "lanes":
        def line(o):
            kept = unflatten(o, out_ext)
            body = start + [loop("k", n // 2, lambda k: fold_pair(
                helper, tirx.BufferLoad(acc, [0]), element(at(kept, 2 * k))), tirx.ForKind.SERIAL)]
            if n % 2:  # the odd one out, into lane 0
                value = _abs_if(op.kind, element(at(kept, tirx.const(n - 1, "int32"))))
                body.append(tirx.BufferStore(acc, combine(tirx.BufferLoad(acc, [0]), value), [0]))
            body.append(store_result(kept, combine(tirx.BufferLoad(acc, [0]), tirx.BufferLoad(acc, [1]))))
            return seq(body)

        return loop("o", size(out_ext), line, tirx.ForKind.SERIAL)

    # "outputs": lines 2j and 2j + 1 along the last axis fold together
    pair_ext = out_ext[:-1] + [out_ext[-1] // 2]

    def two_lines(o):
        kept = unflatten(o, pair_ext)
        kept[-1] = kept[-1] * 2
        body = start + [loop("k", n, lambda k: fold_pair(
            helper, tirx.BufferLoad(acc, [0]), element(at(kept, k))), tirx.ForKind.SERIAL)]
        for lane in (0, 1):
            body.append(store_result(kept[:-1] + [kept[-1] + lane], tirx.BufferLoad(acc, [lane])))
        return seq(body)

    return loop("o", size(pair_ext), two_lines, tirx.ForKind.SERIAL)


def _abs_if(kind: str, value):
    return tvm.tirx.abs(value) if kind in ("abssum", "absmax") else value
