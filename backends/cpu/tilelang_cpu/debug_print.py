"""T.print on the cpu backend (language/debug_print.py): the kernel calls back into Python through
TVM's packed-function registry (``T.call_packed``), which prints each line as the GPU helpers'
printf does (language/debug_print.print_line).

A kernel looks the function up by name when it runs, so the name must be registered in every
process that loads one: ``load_module`` (runtime.py) imports this module.
"""

from __future__ import annotations

import builtins

PRINT_FUNC = "tilelang_cpu.debug_print"


def _print(msg, bx, by, bz, tx, ty, tz, dtype=None, value=None, buf="", index=-1):
    from tilelang_core.language.debug_print import print_line

    builtins.print(print_line(msg, (bx, by, bz, tx, ty, tz), dtype, value, buf, index), flush=True)


def register() -> None:
    import tvm_ffi

    if tvm_ffi.get_global_func(PRINT_FUNC, allow_missing=True) is None:
        tvm_ffi.register_global_func(PRINT_FUNC, _print)
