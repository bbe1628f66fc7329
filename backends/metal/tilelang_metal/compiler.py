"""The metal "binary": MSL plus what a launch needs, as one JSON artifact.

There is no MSL compiler off macOS, and torch compiles MSL on the device at load time
(``torch.mps.compile_shader``), so the artifact is the source and its launch contract, read from
the lowered kernel and the generated signature:

* ``buffers``: ``[[buffer(i)]]`` index -> kernel parameter (TVM names them ``<param>_ptr``);
* ``args``: the ``constant <kernel>_args_t&`` struct TVM emits for scalars and dynamic extents
  (one 8-byte slot each, TVM's ``__TVMArgUnion`` packing) and its buffer index;
* ``grid``: threadgroups per dimension as small expression trees over those scalars and the
  tensors' dynamic extents (``shape_vars``: name -> (parameter, axis)); ``threads``: the
  threadgroup size (the kit uses threadIdx.x only).

Example::

    data = build_artifact(lowered_mod, msl, options)     # bytes of JSON
    launch = json.loads(data)["grid"]
"""

from __future__ import annotations

import json
import re

from tvm import tirx

from tilelang_core.errors import CompileError

FORMAT = "tilelang-metal/1"
_BUFFER = re.compile(r"(?:device|constant) [\w ]+?[*&] ?(\w+) \[\[ buffer\((\d+)\) \]\]")
_ARGS_STRUCT = re.compile(r"struct (\w+)_args_t \{(.*?)\};", re.S)
_SLOT = re.compile(r"(\w+) (\w+)\[2\];")
_OPS = {"Add": "add", "Sub": "sub", "Mul": "mul", "FloorDiv": "floordiv", "FloorMod": "floormod",
        "Min": "min", "Max": "max", "Div": "floordiv"}


def expr_tree(expr, kernel: str):
    """A launch extent as JSON: ints, ["var", name], [op, a, b]."""
    if isinstance(expr, int):
        return expr
    kind = type(expr).__name__
    if kind == "IntImm":
        return int(expr.value)
    if kind == "Var":
        return ["var", str(expr.name)]
    if kind == "Cast":
        return expr_tree(expr.value, kernel)
    if kind in _OPS:
        return [_OPS[kind], expr_tree(expr.a, kernel), expr_tree(expr.b, kernel)]
    raise CompileError(f"kernel '{kernel}': launch extent {expr} uses {kind}, which the metal "
                       f"runtime cannot evaluate; use +, -, *, //, %, min, max of sizes")


def launch_extents(func: tirx.PrimFunc, kernel: str) -> tuple[list, int]:
    """(threadgroups along x, y, z, threads per threadgroup) of a lowered kernel."""
    import tvm_ffi

    found = {}

    def on_attr(attr):
        if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar):
            found[str(attr.node.thread_tag)] = attr.value

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)])
    grid = [expr_tree(found.get(f"blockIdx.{d}", 1), kernel) for d in "xyz"]
    threads = found.get("threadIdx.x")
    if threads is None or type(threads).__name__ != "IntImm":
        raise CompileError(f"kernel '{kernel}' has no constant threadIdx.x extent")
    return grid, int(threads.value)


def shape_vars(func: tirx.PrimFunc) -> dict:
    out = {}
    for param in func.params:
        if tirx.is_buffer_var(param):
            for axis, dim in enumerate(param.ty.shape):
                if isinstance(dim, tirx.Var):
                    out.setdefault(str(dim.name), [str(param.name), axis])
    return out


def signature(source: str) -> tuple[dict, dict | None]:
    """({buffer index: parameter name}, args struct or None) from the generated kernel."""
    head = source[source.find("kernel void"):]
    head = head[:head.find(") {")]
    buffers, args = {}, None
    struct = _ARGS_STRUCT.search(source)
    for name, index in _BUFFER.findall(head):
        if struct is not None and name == "arg":
            fields = [[field, ctype] for ctype, field in _SLOT.findall(struct.group(2))]
            args = {"buffer": int(index), "fields": fields}
        else:
            buffers[int(index)] = name[:-4] if name.endswith("_ptr") else name
    return buffers, args


def build_artifact(mod, source: str, options) -> bytes:
    from .codegen import kernel_names

    ((gvar, func),) = mod.functions.items()
    entry = str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else str(gvar.name_hint)
    grid, threads = launch_extents(func, entry)
    buffers, args = signature(source)
    indices = sorted(buffers) + ([args["buffer"]] if args else [])
    if indices != list(range(len(indices))):
        raise CompileError(f"kernel '{entry}': buffer indices {indices} of the generated MSL are not "
                           f"0..n-1; tilelang-metal cannot bind them")
    artifact = {"format": FORMAT, "entry": entry, "kernel": kernel_names(source)[0], "source": source,
                "params": [str(p.name) for p in func.params],
                "buffers": [buffers[i] for i in sorted(buffers)], "args": args,
                "grid": grid, "threads": threads, "shape_vars": shape_vars(func)}
    return json.dumps(artifact, indent=1).encode()
