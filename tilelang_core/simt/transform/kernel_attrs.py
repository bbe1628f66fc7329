"""Attributes of the device kernels that TVM's C printer reads, set after SplitHostDevice.

* A kernel that waits for the previous grid (``T.pdl_sync``) loses ``__restrict__`` on its pointers.
  TVM prints every pointer parameter ``__restrict__`` (the PrimFunc's ``tirx.noalias``); with
  ``const`` that lets nvcc read through the non-coherent data cache (``ld.global.nc``), whose
  contract is that the data does not change while the kernel runs. A kernel launched for
  programmatic dependent launch starts while the previous kernel still writes the tensors it reads
  after ``tl_pdl_sync()``: those reads must be coherent. (TileLang does the same.)
* ``T.annotate_min_blocks_per_sm(n)`` puts TVM's ``tirx.launch_bounds_min_blocks_per_sm`` on the
  kernel function; SplitHostDevice does not carry it to the device kernels, where the printer
  looks for it (``__launch_bounds__(threads, n)``).
"""

from __future__ import annotations

import tvm
from tvm import tirx

#: the dialect's wait helper (SimtDialect.grid_dependency)
GRID_WAIT = "tl_pdl_sync"
#: function attributes the device kernels inherit from the function they were split from
INHERITED = ("tirx.launch_bounds_min_blocks_per_sm",)


def _is_wait(call) -> bool:
    return str(getattr(call.op, "name", "")) == "tirx.call_extern" and len(call.args) > 0 \
        and isinstance(call.args[0], tvm.ir.StringImm) and call.args[0].value == GRID_WAIT


def _waits_for_grid(body) -> bool:
    import tvm_ffi

    found = []
    tvm_ffi.structural_walk(body, [(tvm.ir.Call, lambda c: found.append(c) if _is_wait(c) else None)])
    return bool(found)


def _is_kernel(func) -> bool:
    return func.attrs is not None and "calling_conv" in func.attrs and int(func.attrs["calling_conv"]) == 2


@tvm.transform.module_pass(opt_level=0, name="tilelang_simt.KernelAttrs")
def KernelAttrs(mod, _ctx):  # noqa: N802 - a TVM pass
    funcs = [(g, f) for g, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)]
    inherited = {key: f.attrs[key] for _, f in funcs if not _is_kernel(f) and f.attrs is not None
                 for key in INHERITED if key in f.attrs}
    for gvar, func in funcs:
        if not _is_kernel(func):
            continue
        updated = func
        for key, value in inherited.items():
            updated = updated.with_attr(key, value)
        if _waits_for_grid(func.body):
            updated = updated.with_attr("tirx.noalias", False)
        if updated is not func:
            mod[gvar] = updated
    return mod
