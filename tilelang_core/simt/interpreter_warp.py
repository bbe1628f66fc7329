"""The SIMT interpreter's models of the warp helpers (tl_ballot_sync, tl_shfl_sync,
tl_warp_reduce_*, ...; their contract is in tilelang_core/simt/__init__.py), written from the
contract, for every backend: the interpreter runs a block's lanes in lockstep, so a warp is a
slice of them (``tl.warp_size`` on the lowered kernel) and the active lanes are its read mask.

The models are stricter than the hardware where the hardware is undefined: a lane named by a
helper's lane mask that does not execute the call, a shuffle that reads a lane that does not,
a warp reduction or ``elect`` on a partial warp, a block vote that part of the block skips: each
raises, so a test sees the bug a GPU would turn into garbage or a hang.
"""

from __future__ import annotations

import numpy as np

from tilelang_core.ir.intrinsics import fns_reference

from .interpreter import NOT_HANDLED

_REDUCE = {"sum": np.add, "max": np.fmax, "min": np.fmin, "bitand": np.bitwise_and, "bitor": np.bitwise_or}


def _per_lane(interp, expr):
    return np.broadcast_to(np.asarray(interp.expr(expr)), (interp.lanes,))


def _warps(interp):
    ws = interp.warp_size
    for start in range(0, interp.lanes, ws):
        yield start, np.arange(start, min(start + ws, interp.lanes))


def _mask_lanes(interp, name, lanes_arg, active, start, lanes):
    """The lanes of one warp its (uniform) lane mask names; every one must be executing."""
    masks = {int(m) for m in np.asarray(lanes_arg)[lanes][active[lanes]]}
    if len(masks) > 1:
        raise RuntimeError(f"{name}: the lanes of warp {start // interp.warp_size} pass different lane masks "
                           f"({', '.join(hex(m) for m in sorted(masks))})")
    mask = masks.pop()
    named = np.array([(mask >> int(lane - start)) & 1 for lane in lanes], dtype=bool)
    missing = lanes[named & ~active[lanes]]
    if missing.size:
        raise RuntimeError(f"{name}: lane(s) {missing.tolist()} of the mask {mask:#x} do not execute it "
                           f"(undefined on the GPU: every lane the mask names must take part)")
    return named


def warp_helper(interp, name: str, args, mask):
    """The value of helper ``name`` per lane, or NOT_HANDLED for names that are not warp helpers."""
    active = interp.read_mask & np.broadcast_to(mask, (interp.lanes,))
    if name in ("tl_ballot_sync", "tl_any_sync", "tl_all_sync"):
        lanes_arg, pred = _per_lane(interp, args[0]), _per_lane(interp, args[1]).astype(bool)
        out = np.zeros(interp.lanes, dtype=np.uint64 if name == "tl_ballot_sync" else np.int32)
        for start, lanes in _warps(interp):
            if not active[lanes].any():
                continue
            named = _mask_lanes(interp, name, lanes_arg, active, start, lanes)
            voters = named & active[lanes]
            bits = sum(1 << int(lane - start) for lane in lanes[voters & pred[lanes]])
            if name == "tl_ballot_sync":
                out[lanes] = np.uint64(bits)
            elif name == "tl_any_sync":
                out[lanes] = int(bits != 0)
            else:
                out[lanes] = int(bool(pred[lanes][voters].all()))
        return out
    if name == "tl_activemask":
        out = np.zeros(interp.lanes, dtype=np.uint64)
        for start, lanes in _warps(interp):
            out[lanes] = np.uint64(sum(1 << int(lane - start) for lane in lanes[active[lanes]]))
        return out
    if name in ("tl_match_any_sync", "tl_match_all_sync"):
        lanes_arg, value = _per_lane(interp, args[0]), _bits(_per_lane(interp, args[1]))
        out = np.zeros(interp.lanes, dtype=np.uint32)
        for start, lanes in _warps(interp):
            if not active[lanes].any():
                continue
            named = _mask_lanes(interp, name, lanes_arg, active, start, lanes) & active[lanes]
            voters = lanes[named]
            if name == "tl_match_all_sync":
                same = len({int(value[lane]) for lane in voters}) == 1
                mask = int(np.asarray(lanes_arg)[voters[0]]) & 0xFFFFFFFF
                out[voters] = mask if same else 0
            else:
                for lane in voters:
                    out[lane] = sum(1 << int(p - start) for p in voters if value[p] == value[lane])
        return out
    if name == "tl_shfl_sync":
        lanes_arg, value, src = _per_lane(interp, args[0]), _per_lane(interp, args[1]), _per_lane(interp, args[2])
        out = value.copy()
        for start, lanes in _warps(interp):
            if not active[lanes].any():
                continue
            named = _mask_lanes(interp, name, lanes_arg, active, start, lanes)
            for lane in lanes[active[lanes] & named]:
                source = start + int(src[lane])
                if not (start <= source < start + interp.warp_size) or source >= interp.lanes or not active[source]:
                    raise RuntimeError(f"tl_shfl_sync: lane {lane} reads lane {source - start} of its warp, which "
                                       f"does not execute the shuffle (undefined on the GPU)")
                out[lane] = value[source]
        return out
    if name.startswith("tl_warp_reduce_"):
        op = _REDUCE[name[len("tl_warp_reduce_"):]]
        value = _per_lane(interp, args[0]).copy()
        ws = interp.warp_size
        for start, lanes in _warps(interp):
            if not active[lanes].any():
                continue
            if len(lanes) != ws or not active[lanes].all():
                raise RuntimeError(f"{name} needs every lane of the {ws}-lane warp (warp {start // ws} has "
                                   f"{int(active[lanes].sum())} executing it)")
            v = value[lanes]
            offset = ws // 2
            while offset:  # the butterfly the preludes run, in their order
                v = op(v, v[np.arange(ws) ^ offset])
                offset //= 2
            value[lanes] = v
        return value
    if name == "tl_named_barrier":
        # lockstep: nothing to wait for; check that the count is the threads that arrive
        count = int(np.asarray(interp.expr(args[1])).reshape(-1)[0])
        if int(active.sum()) != count:
            raise RuntimeError(f"tl_named_barrier(count={count}) reached by {int(active.sum())} threads")
        return None
    if name == "tl_sync_warp":
        lanes_arg = _per_lane(interp, args[0])
        for start, lanes in _warps(interp):
            if active[lanes].any():
                _mask_lanes(interp, name, lanes_arg, active, start, lanes)
        return None
    if name == "tl_elect_one_sync":
        out = np.zeros(interp.lanes, dtype=bool)
        for _, lanes in _warps(interp):
            if active[lanes].any():
                out[lanes[active[lanes]][0]] = True
        return out
    if name in ("tl_syncthreads_count", "tl_syncthreads_and", "tl_syncthreads_or"):
        if not active.all():
            raise RuntimeError(f"{name} is a block barrier: {int((~active).sum())} thread(s) of the block do not "
                               f"reach it (the GPU would hang or misbehave)")
        count = int(_per_lane(interp, args[0]).astype(bool).sum())
        result = {"tl_syncthreads_count": count, "tl_syncthreads_and": int(count == interp.lanes),
                  "tl_syncthreads_or": int(count > 0)}[name]
        return np.full(interp.lanes, result, dtype=np.int32)
    if name == "tl_ffs":
        value = _per_lane(interp, args[0])
        bits = 64 if value.dtype.itemsize == 8 else 32
        out = np.zeros(interp.lanes, dtype=np.int32)
        for lane in range(interp.lanes):
            v = int(value[lane]) & ((1 << bits) - 1)
            out[lane] = (v & -v).bit_length()
        return out
    if name == "tl_fns":
        m, b, o = (_per_lane(interp, a) for a in args)
        return np.array([fns_reference(int(m[i]), int(b[i]), int(o[i])) for i in range(interp.lanes)],
                        dtype=np.uint32)
    if name == "tl_ldg":
        ptr = interp.pointer(args[0])
        return ptr.storage.read(ptr.index, active)
    return NOT_HANDLED


def _bits(values: np.ndarray) -> np.ndarray:
    """Values compared as bit patterns (match_*_sync compares bits: -0.0 and 0.0 differ)."""
    if values.dtype.kind == "f":
        return values.view(np.uint32 if values.dtype.itemsize == 4 else np.uint64)
    return values


__all__ = ["warp_helper"]
