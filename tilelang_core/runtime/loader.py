"""Artifact on disk -> tvm-ffi module -> the entry function that launches the kernel.

Backends call ``load_library`` from ``Backend.load``; the JIT calls ``entry_function`` on whatever
``Backend.load`` returned. Both turn tvm-ffi's bare errors into messages that name the kernel and
the file, because "Module has no function 'main'" alone does not tell a user what to do.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import CompileError, LaunchError


def load_library(path: str | Path, *, kernel: str | None = None):
    """Load a shared library built for tvm-ffi and return the ``tvm_ffi.Module``.

    Example (any ``.so`` exported by TVM or by ``JITKernel.export_library``)::

        mod = load_library("/tmp/add.so")
        mod["add"](a, b, c)
    """
    import tvm_ffi  # deferred: importing tvm_ffi imports torch when installed (~1 s)

    path = Path(path)
    who = f"kernel '{kernel}'" if kernel else "kernel"
    if not path.is_file():
        raise LaunchError(f"cannot load {who}: artifact {path} does not exist; recompile it "
                          f"(a cached copy may have been evicted)")
    try:
        return tvm_ffi.load_module(str(path))
    except Exception as exc:  # tvm-ffi raises RuntimeError/OSError flavours depending on the cause
        raise CompileError(f"cannot load {who} from {path}: {exc}; the artifact is unusable on this "
                           f"machine (missing runtime library or built for another platform)",
                           log=str(exc)) from exc


def entry_function(module, name: str | None, *, kernel: str | None = None):
    """The function of ``module`` that launches the kernel.

    ``module`` may already be a callable (a backend whose ``load`` returns the function itself).
    With ``name`` None, or when ``name`` is missing, the module's own entry (``main``) is used.
    """
    if not hasattr(module, "get_function"):
        if callable(module):
            return module
        raise LaunchError(f"backend load() returned {type(module).__name__}, neither a tvm-ffi module "
                          f"nor a callable, for kernel '{kernel or name}'")
    names = [n for n in (name, "main") if n]
    for candidate in names:
        try:
            return module.get_function(candidate)
        except AttributeError:
            continue
    raise LaunchError(f"compiled module of kernel '{kernel or name}' has no function "
                      f"{' or '.join(repr(n) for n in names)}; the backend exported a different "
                      f"symbol (check the PrimFunc's global_symbol)")
