"""Registry of TileLang tile ops as TVM ops named ``tl.tile.<name>``.

Each op class in :mod:`tilelang_core.ir.ops` registers itself here with :func:`register_tile_op`.
The TVM op is created on registration (the first ``register_op_attr`` on an unknown name creates
it) with ``TIRxOpCategory = "tile_primitive"``, which ``TilePrimitiveCall`` requires of its op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import tvm
from tvm.tirx import CallEffectKind

if TYPE_CHECKING:  # pragma: no cover
    from .ops import TileOp

OP_PREFIX = "tl.tile."

_CLASSES: dict[str, type[TileOp]] = {}
_OPS: dict[str, tvm.ir.Op] = {}


def _register_tvm_op(full_name: str, short_name: str) -> tvm.ir.Op:
    # Tile ops read and write memory: opaque, so no generic pass may drop or reorder them.
    tvm.ir.register_op_attr(full_name, "TCallEffectKind", CallEffectKind.Opaque.value)
    tvm.ir.register_op_attr(full_name, "TIRxOpCategory", "tile_primitive")
    # Printed as ``T.tile.tl_<name>(...)``: readable, and distinct from TVM's own tile ops.
    tvm.ir.register_op_attr(full_name, "TScriptPrinterName", f"tl_{short_name}")
    return tvm.ir.Op.get(full_name)


def register_tile_op(cls: type[TileOp]) -> type[TileOp]:
    """Class decorator: register ``cls`` as the definition of ``tl.tile.<cls.name>``."""
    name = cls.name
    if name in _CLASSES and _CLASSES[name] is not cls:
        raise ValueError(f"tile op {name!r} is already registered by {_CLASSES[name].__qualname__}")
    full_name = OP_PREFIX + name
    if name not in _OPS:
        try:
            existing = tvm.ir.Op.get(full_name)
        except Exception:  # noqa: BLE001 - Op.get raises a TVM error for unknown names
            existing = None
        if existing is not None and existing.get_attr("TIRxOpCategory") == "tile_primitive":
            _OPS[name] = existing  # module reloaded: the TVM op outlives the Python class
        else:
            _OPS[name] = _register_tvm_op(full_name, name)
    _CLASSES[name] = cls
    return cls


def get_op(name: str) -> tvm.ir.Op:
    """The TVM op of tile op ``name`` (short name like ``"copy"`` or full ``"tl.tile.copy"``)."""
    short = name[len(OP_PREFIX):] if name.startswith(OP_PREFIX) else name
    try:
        return _OPS[short]
    except KeyError:
        raise KeyError(f"unknown tile op {name!r}; registered: {sorted(_OPS)}") from None


def get_op_class(name: str) -> type[TileOp]:
    """The op class for a short or full op name."""
    short = name[len(OP_PREFIX):] if name.startswith(OP_PREFIX) else name
    try:
        return _CLASSES[short]
    except KeyError:
        raise KeyError(f"unknown tile op {name!r}; registered: {sorted(_CLASSES)}") from None


def registered_ops() -> dict[str, type[TileOp]]:
    """Short name -> op class, for every registered tile op."""
    return dict(_CLASSES)


def is_tile_op(stmt) -> bool:
    """True when ``stmt`` is a ``TilePrimitiveCall`` of one of our ``tl.tile.*`` ops."""
    return (isinstance(stmt, tvm.tirx.TilePrimitiveCall)
            and str(stmt.op.name).startswith(OP_PREFIX)
            and str(stmt.op.name)[len(OP_PREFIX):] in _CLASSES)
