"""The per-call fast path: a launch function generated for each compiled kernel.

Why generated code: what a call needs (argument count, exact types, output shapes) is known when
the kernel is built, so we emit it as straight-line Python with every constant bound as a global:
no loops over parameters, no dict lookups, no per-call objects beyond the outputs. Anything unusual
(subclasses, mixed frameworks, numpy scalars, a failing test) falls through to
``ArgBinder.launch``, which either explains the problem in a ``LaunchError`` or launches anyway.

Two flavours, chosen by the backend's ``entry_checks_arguments``:

* the entry function is TVM's packed-API wrapper (cpu, cuda, hip), which already checks ndim,
  dtype, shape (symbolic extents bound consistently), strides, device type and id in C before it
  runs anything. Repeating that in Python cost ~1 us a call (every torch attribute is ~50 ns), so
  the launcher tests only what the wrapper cannot: exact types (the wrapper would read any tvm-ffi
  object as a DLTensor), data alignment (the wrapper assumes it; a misaligned pointer faults;
  unless the backend's wrapper tests it too, ``entry_checks_alignment``, as cuda's does: a refused
  call then goes to ``ArgBinder.relaunch``, which stages misaligned tensors), scalar kinds (it
  takes True for a float). When the wrapper refuses, ``ArgBinder.launch_failed``
  re-runs the full checks without launching, so the error still names the parameter::

    def launch(args):
        if len(args) != 2: return _slow(args)
        a0, a1, = args
        if type(a0) is _Tensor:
            if type(a1) is not _Tensor or a0.data_ptr() % 64 or a1.data_ptr() % 64: return _slow(args)
            s = a0.shape
            if len(s) != 1: return _slow(args)
            v0 = s[0]
            try: o2 = a0.new_empty(v0)     # a0's dtype is C's, else the wrapper refuses a0
            except Exception: o2 = None
            if o2 is None: return _slow(args)
        ...
        try: _fn(a0, a1, o2)
        except Exception as e: raise _failed(e, args) from _cause(e)
        return o2

* any other entry function (a backend's own callable): every check is emitted in Python, exact
  comparisons against precomputed dtype objects and shapes, as ``_checked_branch`` shows.

Allocation uses varargs sizes (``new_empty(v0, v1)``): torch parses a tuple of sizes ~0.5 us slower.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from . import args as _args
from .args import ArgBinder, aligned_empty, numpy_dtype, torch_dtype
from .params import KernelParam


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []
        self.globals: dict = {}

    def emit(self, depth: int, text: str):
        self.lines.append("    " * depth + text)

    def const(self, prefix: str, value) -> str:
        name = f"_{prefix}{len(self.globals)}"
        self.globals[name] = value
        return name


def _device_test(var: str, device_type: str | None, first: str) -> str | None:
    """Python condition that is True when tensor ``var`` is on the wrong device."""
    if var == first:
        if device_type is None:
            return None
        if device_type in ("cpu", "cuda"):
            return f"not {var}.is_{device_type}"
        return f"{var}.device.type != {device_type!r}"
    if device_type == "cpu":
        return f"not {var}.is_cpu"
    return f"{var}.get_device() != {first}.get_device()"


# framework -> (exact type, dtype converter, constant tag, "not contiguous" test, data pointer)
_FRAMEWORKS = {
    "torch": ("_Tensor", torch_dtype, "td", "not {a}.is_contiguous()", "{a}.data_ptr()"),
    "numpy": ("_ndarray", numpy_dtype, "nd", "not {a}.flags.c_contiguous", "{a}.ctypes.data"),
}


def _checked_branch(em: _Emitter, framework: str, inputs: Sequence[KernelParam],
                    outputs: Sequence[KernelParam], names: dict, varmap: dict,
                    device_type: str | None) -> bool:
    """Every check in Python, for entry functions that check nothing themselves."""
    first = names[next(p.index for p in inputs if p.is_tensor)]
    derived = []
    for p in inputs:
        if not p.is_tensor:
            continue
        a = names[p.index]
        conds = []
        type_name, to_dtype, tag, not_contiguous, data_ptr = _FRAMEWORKS[framework]
        dtype = to_dtype(p.dtype)
        if dtype is None:
            return False
        if a != first:
            conds.append(f"type({a}) is not {type_name}")
        conds.append(f"{a}.dtype is not {em.const(tag, dtype)}")
        if p.strides is None:
            conds.append(not_contiguous.format(a=a))
        if p.alignment > 1:
            conds.append(f"{data_ptr.format(a=a)} % {p.alignment}")
        if framework == "torch":
            device = _device_test(a, device_type, first)
            if device:
                conds.append(device)
        if all(d.value is not None for d in p.dims):
            conds.append(f"{a}.shape != {em.const('sh', tuple(d.value for d in p.dims))}")
            em.emit(2, f"if {' or '.join(conds)}: return _slow(args)")
            continue
        em.emit(2, f"if {' or '.join(conds)}: return _slow(args)")
        em.emit(2, f"s = {a}.shape")
        em.emit(2, f"if len(s) != {len(p.dims)}: return _slow(args)")
        checks = []
        for axis, d in enumerate(p.dims):
            if d.value is not None:
                checks.append(f"s[{axis}] != {d.value}")
            elif d.var is not None and d.var not in varmap:
                varmap[d.var] = f"v{len(varmap)}"
                em.emit(2, f"{varmap[d.var]} = s[{axis}]")
            elif d.var is not None:
                checks.append(f"s[{axis}] != {varmap[d.var]}")
            elif d.py is not None:
                local = f"{a}_d{axis}"
                em.emit(2, f"{local} = s[{axis}]")
                derived.append((local, d))
        if checks:
            em.emit(2, f"if {' or '.join(checks)}: return _slow(args)")
    for local, d in derived:
        if all(v in varmap for v in d.vars):
            em.emit(2, f"if {local} != {_subst(d.py, d.vars, varmap)}: return _slow(args)")
    return _allocate(em, framework, outputs, names, varmap, first, None)


def _trusting_branch(em: _Emitter, framework: str, inputs: Sequence[KernelParam],
                     outputs: Sequence[KernelParam], names: dict, varmap: dict, aligns: bool = False) -> bool:
    """Only what the entry function's own checks cannot do (module docstring); ``aligns``: the
    entry function tests alignment too."""
    tensors = [p for p in inputs if p.is_tensor]
    first = names[tensors[0].index]
    type_name, to_dtype, tag, _, data_ptr = _FRAMEWORKS[framework]
    if any(to_dtype(p.dtype) is None for p in tensors):
        return False
    conds = [f"type({names[p.index]}) is not {type_name}" for p in tensors[1:]]
    conds += [f"{data_ptr.format(a=names[p.index])} % {p.alignment}" for p in tensors
              if p.alignment > 1 and not aligns]
    if conds:
        em.emit(2, f"if {' or '.join(conds)}: return _slow(args)")
    # shapes are read only to size the outputs; the entry function checks them all
    needed = {v for p in outputs for d in p.dims for v in d.vars}
    for p in tensors:
        axes = [(axis, d.var) for axis, d in enumerate(p.dims)
                if d.var in needed and d.var not in varmap]
        if not axes:
            continue
        em.emit(2, f"s = {names[p.index]}.shape")
        em.emit(2, f"if len(s) != {len(p.dims)}: return _slow(args)")
        for axis, var in axes:
            varmap[var] = f"v{len(varmap)}"
            em.emit(2, f"{varmap[var]} = s[{axis}]")
    return _allocate(em, framework, outputs, names, varmap, first, tensors[0].dtype)


def _allocate(em: _Emitter, framework: str, outputs: Sequence[KernelParam], names: dict,
              varmap: dict, first: str, first_dtype: str | None) -> bool:
    """Emit the output allocations; False when this framework cannot hold an output's dtype.

    ``first_dtype``: the first tensor's dtype is known to be checked by the entry function, so
    ``new_empty`` may inherit it. Extents computed from unchecked shapes may be invalid (negative):
    a failing allocation goes to the slow path, which names the argument at fault.
    """
    if not outputs:
        return True
    lines = []
    for p in outputs:
        sizes = [str(d.value) if d.value is not None else varmap[d.var] if d.var
                 else _subst(d.py, d.vars, varmap) for d in p.dims]
        out = names[p.index]
        if framework == "torch":
            dtype = torch_dtype(p.dtype)
            if dtype is None:
                return False
            # varargs sizes, and no device argument: both cheaper for torch to parse
            sizes_text = ", ".join(sizes) if sizes else "()"
            keyword = "" if p.dtype == first_dtype else f", dtype={em.const('td', dtype)}"
            lines.append(f"{out} = {first}.new_empty({sizes_text}{keyword})")
        else:
            dtype = numpy_dtype(p.dtype)
            if dtype is None:
                return False
            shape = f"({sizes[0]},)" if len(sizes) == 1 else f"({', '.join(sizes)})"
            lines.append(f"{out} = _aligned_empty({shape}, {em.const('nd', dtype)}, {p.alignment})")
    if first_dtype is None:  # checked branch: extents were validated above
        for line in lines:
            em.emit(2, line)
        return True
    em.emit(2, "try:")
    for line in lines:
        em.emit(3, line)
    em.emit(2, "except Exception:")
    em.emit(3, f"{names[outputs[0].index]} = None")
    em.emit(2, f"if {names[outputs[0].index]} is None: return _slow(args)")
    return True


_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _subst(py: str, variables: Sequence[str], varmap: dict) -> str:
    """Rename the symbolic variables of a Python extent expression to the launcher's locals."""
    return _NAME.sub(lambda m: varmap[m.group(0)] if m.group(0) in variables else m.group(0), py)


def _scalar_test(var: str, dtype: str) -> str:
    """True when ``var`` is not exactly the Python type the slow path would accept unchanged."""
    if dtype == "bool":
        return f"type({var}) is not bool"
    if dtype.startswith(("int", "uint")):
        return f"type({var}) is not int"
    return f"type({var}) is not float and type({var}) is not int"


def make_launcher(binder: ArgBinder, device_type: str | None, entry_checks: bool = False,
                  entry_aligns: bool = False):
    """Generate the fast launch function ``launch(args_tuple)`` for ``binder``'s kernel.

    ``entry_checks``: the entry function validates its arguments itself (module docstring);
    ``entry_aligns``: alignment too (a refused call then goes to ``ArgBinder.relaunch``, which
    stages misaligned tensors through the slow path or explains the refusal).
    """
    params = binder.params
    inputs, outputs = binder.inputs, binder.outputs
    em = _Emitter()
    em.globals.update(_slow=binder.launch, _fn=binder.function, _failed=binder.launch_failed, _cause=binder.cause,
                      _relaunch=binder.relaunch, _aligned_empty=aligned_empty, _ndarray=np.ndarray)
    names = {p.index: (f"a{i}" if not p.is_output else f"o{i}") for i, p in enumerate(params)}
    em.emit(0, "def launch(args):")
    # no tensor to check, or a packed 4-bit one (its bytes come as uint8, int8 or float4 pairs:
    # the slow path views them as the kernel's int8)
    # T.assume conditions on the arguments: the slow path checks them (jit/params.HostAssume)
    if not any(p.is_tensor for p in inputs) or any(p.packed for p in params) or binder.assumes:
        em.emit(1, "return _slow(args)")
    else:
        em.emit(1, f"if len(args) != {len(inputs)}: return _slow(args)")
        em.emit(1, f"{', '.join(names[p.index] for p in inputs)}, = args")
        varmap: dict[str, str] = {}
        scalars = [p for p in inputs if not p.is_tensor]
        for p in scalars:
            varmap[p.name] = names[p.index]
        if scalars:
            tests = " or ".join(_scalar_test(names[p.index], p.dtype) for p in scalars)
            em.emit(1, f"if {tests}: return _slow(args)")
        first = names[next(p.index for p in inputs if p.is_tensor)]
        branches = []
        if _args.torch is not None:
            branches.append(("torch", "_Tensor"))
            em.globals.update(_Tensor=_args.torch.Tensor)
        if device_type in (None, "cpu"):
            branches.append(("numpy", "_ndarray"))
        keyword = "if"
        for framework, cls in branches:
            mark = len(em.lines)
            em.emit(1, f"{keyword} type({first}) is {cls}:")
            if entry_checks:
                ok = _trusting_branch(em, framework, inputs, outputs, names, dict(varmap), entry_aligns)
            else:
                ok = _checked_branch(em, framework, inputs, outputs, names, dict(varmap),
                                     device_type)
            if ok and len(em.lines) == mark + 1:  # nothing to check here (one tensor, no outputs)
                em.emit(2, "pass")
            if ok:
                keyword = "elif"
            else:  # a dtype this framework lacks: that framework always takes the slow path
                del em.lines[mark:]
        em.emit(1, "else:" if keyword == "elif" else "if True:")
        em.emit(2, "return _slow(args)")
        # launch_failed gets the arguments only when the entry function did the checking: it then
        # re-runs ours (no launch) to turn the wrapper's refusal into a message naming the parameter
        failed_args = ", args" if entry_checks else ""
        outs = [names[p.index] for p in outputs]
        em.emit(1, f"try: _fn({', '.join(names[p.index] for p in params)})")
        if entry_aligns:  # a misaligned tensor is not an error: the slow path stages it
            em.emit(1, "except Exception as e: return _relaunch(e, args)")
        else:
            # our own refusal stands alone; a failed launch keeps the wrapper's error as its cause
            em.emit(1, f"except Exception as e: raise _failed(e{failed_args}) from _cause(e)")
        em.emit(1, "return None" if not outs else f"return {outs[0]}" if len(outs) == 1
                else f"return [{', '.join(outs)}]")
    source = "\n".join(em.lines) + "\n"
    namespace = dict(em.globals)
    exec(compile(source, f"<tilelang launcher {binder.kernel}>", "exec"), namespace)  # noqa: S102
    launch = namespace["launch"]
    launch.__source__ = source  # for debugging: print(kernel._launch.__source__)
    return launch
