"""T.print on the cpu backend (language/debug_print.py): the kernel calls back into Python through
TVM's packed-function registry (``T.call_packed``), which prints each line in the format of the
GPU helpers' printf (tilelang_cuda/warp_intrinsics.py).

A kernel looks the function up by name when it runs, so the name must be registered in every
process that loads one: ``load_module`` (runtime.py) imports this module.
"""

from __future__ import annotations

import builtins

PRINT_FUNC = "tilelang_cpu.debug_print"


def _print(msg, bx, by, bz, tx, ty, tz, dtype=None, value=None, buf="", index=-1):
    line = f"msg='{msg}' BlockIdx=({bx}, {by}, {bz}), ThreadIdx=({tx}, {ty}, {tz})"
    if dtype is not None:
        if dtype == "bool":
            text = "true" if value else "false"
        elif isinstance(value, float):
            text = f"{value:.9g}"
        else:
            text = str(value)
        line += f": {f'buffer={buf}, index={index}, ' if buf else ''}dtype={dtype} value={text}"
    builtins.print(line, flush=True)


def register() -> None:
    import tvm_ffi

    if tvm_ffi.get_global_func(PRINT_FUNC, allow_missing=True) is None:
        tvm_ffi.register_global_func(PRINT_FUNC, _print)
