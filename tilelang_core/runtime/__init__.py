"""Loading compiled artifacts and finding their entry function, through tvm-ffi only.

Nothing here imports ``tvm``: a kernel exported with ``JITKernel.export_library`` runs with
apache-tvm-ffi alone (plus whatever runtime library the backend linked against).

    >>> from tilelang_core.runtime import load_library, entry_function   # doctest: +SKIP
    >>> fn = entry_function(load_library("add.so"), "add", kernel="add")  # doctest: +SKIP
    >>> fn(a, b, c)                                                        # doctest: +SKIP
"""

from .loader import entry_function, load_library

__all__ = ["entry_function", "load_library"]
