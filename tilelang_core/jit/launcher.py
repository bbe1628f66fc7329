"""The per-call fast path: a launch function generated for each compiled kernel.

Why generated code: the checks a call needs (dtype, shape, symbolic extents bound consistently,
device, contiguity, alignment) are known when the kernel is built, so we emit them as straight-line
Python with every constant bound as a default-free global: no loops over parameters, no dict lookups,
no per-call objects beyond the outputs. Each test is an exact-type comparison; anything unusual
(subclasses, mixed frameworks, numpy scalars, a failing check) falls through to
``ArgBinder.launch``, which either explains the problem in a ``LaunchError`` or launches anyway.

For ``add(A: (n,) f32, B: (n,) f32, C: (n,) f32)`` with ``out_idx=[2]`` on cpu the torch branch is::

    def launch(args):
        if len(args) != 2: return _slow(args)
        a0, a1 = args
        if type(a0) is _Tensor:
            if (a0.dtype is not _td0 or not a0.is_contiguous() or a0.data_ptr() % 64
                    or not a0.is_cpu): return _slow(args)
            s = a0.shape
            if len(s) != 1: return _slow(args)
            v0 = s[0]
            ...
            o0 = _empty((v0,), dtype=_td2, device=a0.device)
        ...
        try: _fn(a0, a1, o0)
        except Exception as e: raise _failed(e) from e
        return o0
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


def _branch(em: _Emitter, framework: str, inputs: Sequence[KernelParam],
            outputs: Sequence[KernelParam], names: dict, varmap: dict, device_type: str | None):
    """Checks + output allocation for one framework; ends with every output bound."""
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
    for p in outputs:
        shape = ", ".join(str(d.value) if d.value is not None else varmap[d.var] if d.var
                          else _subst(d.py, d.vars, varmap) for d in p.dims)
        shape = f"({shape},)" if len(p.dims) == 1 else f"({shape})"
        out = names[p.index]
        if framework == "torch":
            dtype = torch_dtype(p.dtype)
            if dtype is None:
                return False
            em.emit(2, f"{out} = _empty({shape}, dtype={em.const('td', dtype)}, device={first}.device)")
        else:
            dtype = numpy_dtype(p.dtype)
            if dtype is None:
                return False
            em.emit(2, f"{out} = _aligned_empty({shape}, {em.const('nd', dtype)}, {p.alignment})")
    return True


_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _subst(py: str, variables: Sequence[str], varmap: dict) -> str:
    """Rename the symbolic variables of a Python extent expression to the launcher's locals."""
    return _NAME.sub(lambda m: varmap[m.group(0)] if m.group(0) in variables else m.group(0), py)


def make_launcher(binder: ArgBinder, device_type: str | None):
    """Generate the fast launch function ``launch(args_tuple)`` for ``binder``'s kernel."""
    params = binder.params
    inputs, outputs = binder.inputs, binder.outputs
    em = _Emitter()
    em.globals.update(_slow=binder.launch, _fn=binder.function, _failed=binder.launch_failed,
                      _aligned_empty=aligned_empty, _ndarray=np.ndarray)
    names = {p.index: (f"a{i}" if not p.is_output else f"o{i}") for i, p in enumerate(params)}
    em.emit(0, "def launch(args):")
    if not any(p.is_tensor for p in inputs):
        em.emit(1, "return _slow(args)")
    else:
        em.emit(1, f"if len(args) != {len(inputs)}: return _slow(args)")
        if inputs:
            em.emit(1, f"{', '.join(names[p.index] for p in inputs)}, = args")
        varmap: dict[str, str] = {}
        for p in inputs:
            if not p.is_tensor:
                varmap[p.name] = names[p.index]
                kinds = "(int,)" if p.dtype.startswith(("int", "uint")) else \
                    "(bool,)" if p.dtype == "bool" else "(float, int)"
                em.emit(1, f"if type({names[p.index]}) not in {kinds}: return _slow(args)")
        first = names[next(p.index for p in inputs if p.is_tensor)]
        branches = []
        if _args.torch is not None:
            branches.append(("torch", "_Tensor"))
            em.globals.update(_Tensor=_args.torch.Tensor, _empty=_args.torch.empty)
        if device_type in (None, "cpu"):
            branches.append(("numpy", "_ndarray"))
        keyword = "if"
        for framework, cls in branches:
            mark = len(em.lines)
            em.emit(1, f"{keyword} type({first}) is {cls}:")
            if _branch(em, framework, inputs, outputs, names, dict(varmap), device_type):
                keyword = "elif"
            else:  # a dtype this framework lacks: that framework always takes the slow path
                del em.lines[mark:]
        em.emit(1, "else:" if keyword == "elif" else "if True:")
        em.emit(2, "return _slow(args)")
        em.emit(1, f"try: _fn({', '.join(names[p.index] for p in params)})")
        em.emit(1, "except Exception as e: raise _failed(e) from e")
        outs = [names[p.index] for p in outputs]
        em.emit(1, "return None" if not outs else f"return {outs[0]}" if len(outs) == 1
                else f"return [{', '.join(outs)}]")
    source = "\n".join(em.lines) + "\n"
    namespace = dict(em.globals)
    exec(compile(source, f"<tilelang launcher {binder.kernel}>", "exec"), namespace)  # noqa: S102
    launch = namespace["launch"]
    launch.__source__ = source  # for debugging: print(kernel._launch.__source__)
    return launch
