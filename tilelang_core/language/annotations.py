"""Kernel annotations: ``T.annotate_layout``, ``T.use_swizzle`` and ``T.annotate_safe_value``;
``T.annotate_pass_configs``, ``T.annotate_compile_flags`` and ``T.annotate_min_blocks_per_sm``
(function attributes).

Both are statements that wrap the rest of the kernel body in an attribute (docs/tile-ir.md)::

    T.annotate_layout({A_s: make_swizzled_layout(A_s)})
    T.use_swizzle(panel_size=10, order="row")
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm.script.ir_builder import tirx as B
from tvm.tirx import is_buffer_var

from ..errors import FrontendError, LayoutError
from ..layout.swizzle import SWIZZLE_TAGS
from ..pass_configs import compile_flag_list
from .kernel import current_kernel


#: PrimFunc attributes that carry compile settings with the kernel (TileLang's names); compile()
#: reads them (jit/compiler.py)
PASS_CONFIGS_ATTR = "tilelang_pass_configs"
COMPILE_FLAGS_ATTR = "tilelang_compile_flags"
OUT_IDX_ATTR = "tilelang_out_idx"

# the kernel being parsed: attribute -> value, put on its PrimFunc at the end of the parse
_FUNC_ATTRS: dict = {}


def annotate_pass_configs(configs: dict) -> None:
    """Pass configs that travel with the kernel (``tilelang.compile`` merges them under its own
    ``pass_configs``, which win): ``T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})``."""
    from .parser import current_parser

    if current_parser.get() is None:
        raise FrontendError("T.annotate_pass_configs can only be used inside a kernel")
    if not isinstance(configs, dict):
        raise FrontendError(f"T.annotate_pass_configs takes a dict {{key: value}}, got {configs!r}")
    merged = dict(_FUNC_ATTRS.get(PASS_CONFIGS_ATTR, {}))
    merged.update({str(getattr(k, "value", k)): v for k, v in configs.items()})
    _FUNC_ATTRS[PASS_CONFIGS_ATTR] = merged


def annotate_compile_flags(flags) -> None:
    """Device compiler flags that travel with the kernel (``T.annotate_compile_flags(["--use_fast_math"])``),
    added to ``tilelang.compile``'s ``compile_flags``."""
    from .parser import current_parser

    if current_parser.get() is None:
        raise FrontendError("T.annotate_compile_flags can only be used inside a kernel")
    listed = compile_flag_list(flags)
    if listed is None:
        raise FrontendError(f"T.annotate_compile_flags takes strings, got {flags!r}")
    _FUNC_ATTRS[COMPILE_FLAGS_ATTR] = list(_FUNC_ATTRS.get(COMPILE_FLAGS_ATTR, [])) + listed


#: TVM's attribute for the second __launch_bounds__ argument (its CUDA printer writes it)
MIN_BLOCKS_ATTR = "tirx.launch_bounds_min_blocks_per_sm"


def annotate_min_blocks_per_sm(min_blocks: int) -> None:
    """``T.annotate_min_blocks_per_sm(2)``: ask the device compiler to keep registers low enough for
    ``min_blocks`` blocks of the kernel per SM (``__launch_bounds__(threads, min_blocks)`` on CUDA;
    a hint the cpu backend ignores). Applies to the kernels of this function."""
    current_kernel("T.annotate_min_blocks_per_sm")
    value = getattr(min_blocks, "value", min_blocks)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FrontendError(f"T.annotate_min_blocks_per_sm takes a positive compile-time integer, got {min_blocks!r}")
    _FUNC_ATTRS[MIN_BLOCKS_ATTR] = value


def with_function_attrs(func):
    """``func`` with the attributes the kernel parsed last annotated (then forgotten)."""
    attrs = dict(_FUNC_ATTRS)
    _FUNC_ATTRS.clear()
    for key, value in attrs.items():
        func = func.with_attr(key, value)
    return func


def reset_function_attrs() -> None:
    _FUNC_ATTRS.clear()


def annotate_layout(layout_map: dict):
    """Fix the layout of shared/fragment buffers: ``{buffer: layout}``.

    The map is the node of a ``tl.layout_map`` attribute on the rest of the kernel body; Python
    layouts are stored as ``tvm.tirx.IndexMap`` (see ``_as_ir_layout``).
    """
    current_kernel("T.annotate_layout")
    if not isinstance(layout_map, dict) or not layout_map:
        raise FrontendError("T.annotate_layout takes a non-empty dict {buffer: layout}")
    checked = {}
    for buf, layout in layout_map.items():
        if not is_buffer_var(buf):
            raise FrontendError(f"T.annotate_layout keys must be buffers, got {buf!r}")
        checked[buf] = _as_ir_layout(buf, layout)
    # A Map node (not a dict: B.attr reads a dict as several attributes).
    return B.attr(tvm_ffi.Map(checked), "tl.layout_map", tvm.tirx.const(1, "int32"))


def annotate_safe_value(value_map: dict):
    """``{tensor: value}``: T.Parallel reads past the edge of a global tensor give ``value``
    instead of 0 (transform/safe_values.py)."""
    current_kernel("T.annotate_safe_value")
    if not isinstance(value_map, dict) or not value_map:
        raise FrontendError("T.annotate_safe_value takes a non-empty dict {tensor: value}")
    checked = {}
    for buf, value in value_map.items():
        if not is_buffer_var(buf):
            raise FrontendError(f"T.annotate_safe_value keys must be tensors, got {buf!r}")
        if str(buf.ty.storage_scope) not in ("global", ""):
            raise FrontendError(f"T.annotate_safe_value: '{buf.name}' is in {buf.ty.storage_scope} memory; "
                                f"a safe value is what reads past a global tensor's edge give")
        dtype = str(buf.ty.dtype)
        checked[buf] = tvm.tirx.const(value, dtype) if isinstance(value, (int, float, bool)) \
            else tvm.tirx.Cast(dtype, value)
    return B.attr(tvm_ffi.Map(checked), "tl.safe_value", tvm.tirx.const(1, "int32"))


def Fragment(shape, forward_fn=None, forward_thread_fn=None, replicate: int = 1,  # noqa: N802 - TileLang's name
             forward_index_fn=None):
    """TileLang's register layout from index functions, for ``T.annotate_layout`` on a fragment:
    ``forward_fn(*idx)`` returns ``(thread, register)`` (``forward_fn(*idx, rep)`` with
    ``replicate`` copies), or ``forward_thread_fn`` and ``forward_index_fn`` give the two apart.
    Returns a ``tilelang_core.layout.Fragment`` (its digits read off the functions:
    layout/fitted.py; a map with no digit form is refused, saying why)."""
    from ..layout.fitted import fragment_of_functions

    try:
        shape = [int(s) for s in shape]
    except (TypeError, ValueError):
        raise FrontendError(f"T.Fragment needs a constant shape, got {list(shape)}") from None
    if forward_fn is not None:
        def thread_fn(*v):
            return forward_fn(*v)[0]

        def local_fn(*v):
            args = v + ((tvm.tirx.const(0, "int32"),) if replicate > 1 else ())
            return forward_fn(*args)[1]
    elif forward_thread_fn is not None:
        thread_fn = forward_thread_fn

        def local_fn(*v):
            return forward_index_fn(*v) if forward_index_fn is not None else []
    else:
        raise FrontendError("T.Fragment needs forward_fn (indices -> (thread, register)) or forward_thread_fn")
    try:
        return fragment_of_functions(shape, thread_fn, local_fn, int(replicate))
    except LayoutError as err:
        raise FrontendError(f"T.Fragment: {err}") from None


def _as_ir_layout(buf, layout):
    """The layout as an IR object: TVM objects as given; Python layouts as an ``IndexMap``.

    ``tilelang_core.layout.Layout`` (``offset(*idx)``) maps to ``[offset]``; a ``Fragment``
    (``thread_of``/``local_of``) to ``[IndexMap (*idx, replica) -> [thread, local], replicas]``
    (layout/fitted.py reads it back); a plain function ``f(i, j, ...)`` to what it returns.
    """
    if isinstance(layout, tvm.runtime.Object):
        return layout
    rank = len(buf.ty.shape)
    shape = getattr(layout, "shape", None)
    if shape is not None and len(tuple(shape)) != rank:
        raise FrontendError(f"T.annotate_layout: the layout of {buf.name} has {len(shape)} "
                            f"dimensions but the buffer has {rank}")
    if hasattr(layout, "thread_of") and hasattr(layout, "local_of"):
        replicas = int(getattr(layout, "replicas", 1))

        def with_replica(*idx):
            out = [layout.thread_of(*idx[:rank], replica=idx[rank] if replicas > 1 else 0),
                   layout.local_of(*idx[:rank])]
            return [tvm.tirx.const(x, "int32") if isinstance(x, int) else x for x in out]

        index_map = tvm.tirx.IndexMap.from_func(with_replica, ndim=rank + (replicas > 1), index_dtype="int32")
        return tvm_ffi.Array([index_map, tvm.tirx.const(replicas, "int32")])
    elif hasattr(layout, "offset"):
        def fn(*idx):
            return [layout.offset(*idx)]
    elif callable(layout):
        def fn(*idx):
            out = layout(*idx)
            return list(out) if isinstance(out, (list, tuple)) else [out]
    else:
        raise FrontendError(f"T.annotate_layout: the layout of {buf.name} must be a Layout, a "
                            f"Fragment, an index function or a TVM object, got {layout!r}")
    try:
        index_map = tvm.tirx.IndexMap.from_func(fn, ndim=rank, index_dtype="int32")
    except FrontendError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's function failed on symbolic indices
        raise FrontendError(f"T.annotate_layout: the layout of {buf.name} cannot be applied to "
                            f"symbolic indices: {err}") from None
    kind = getattr(layout, "kind", "")
    if str(buf.ty.storage_scope) != "global" and kind in SWIZZLE_TAGS:
        # the kind travels with the map: a backend may put a swizzle of its own instead of a
        # make_swizzled_layout hint, or keep a bank swizzle its instructions read as is
        return tvm_ffi.Array([index_map, tvm.ir.StringImm(kind)])
    return index_map


def use_swizzle(panel_size: int = 8, order: str = "row", enable: bool = True):
    """Reorder block indices in panels of ``panel_size`` for L2 reuse (``order``: row/col)."""
    current_kernel("T.use_swizzle")
    if not isinstance(panel_size, int) or isinstance(panel_size, bool) or panel_size <= 0:
        raise FrontendError(f"T.use_swizzle panel_size must be a positive constant, "
                            f"got {panel_size!r}")
    if order not in ("row", "col"):
        raise FrontendError(f"T.use_swizzle order must be 'row' or 'col', got {order!r}")
    if not enable:
        return None
    return B.attr(tvm.ir.StringImm(order), "tl.swizzle", tvm.tirx.const(panel_size, "int32"))
