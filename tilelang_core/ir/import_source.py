"""Device source a kernel brings with it: TileLang's ``T.import_source(src)`` and
``T.Kernel(..., prelude=src)``.

The frontend keeps each distinct source as a PrimFunc attribute ``tl.import_source.<digest>``
(a string); a backend that compiles such source (cuda) puts the sources, in a fixed order, before
its first kernel, where ``T.call_extern`` calls into them; every other backend and the
interpreters refuse the kernel by name (they cannot run hand-written device code).
"""

from __future__ import annotations

import hashlib

from tilelang_core.errors import LoweringError

ATTR_PREFIX = "tl.import_source."


def attr_key(source: str) -> str:
    return ATTR_PREFIX + hashlib.sha1(source.encode()).hexdigest()[:16]


def imported_sources(mod) -> list[str]:
    """The sources of every function of ``mod`` (an IRModule or a PrimFunc), each once."""
    funcs = [mod] if not hasattr(mod, "functions") else [f for _, f in mod.functions.items()]
    found = {}
    for func in funcs:
        attrs = getattr(func, "attrs", None)
        if attrs is None:
            continue
        for key in attrs.keys():
            if str(key).startswith(ATTR_PREFIX):
                found[str(key)] = str(attrs[key])
    return [found[k] for k in sorted(found)]


def refuse_imported_sources(func, backend: str) -> None:
    """A LoweringError when ``func`` brings device source, which ``backend`` cannot compile."""
    if imported_sources(func):
        name = func.attrs["global_symbol"] if func.attrs is not None and "global_symbol" in func.attrs else "?"
        raise LoweringError(f"kernel '{name}' brings its own device source (T.import_source or "
                            f"T.Kernel(prelude=...)), which {backend} cannot compile or run; compile "
                            f"it for cuda")
