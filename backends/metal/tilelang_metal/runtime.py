"""Running metal kernels: the JSON artifact (compiler.py) compiled by ``torch.mps.compile_shader``.

``load_kernel(path)`` returns a callable taking the kernel's parameters in order (torch tensors on
``mps``, Python numbers for scalars), as the JIT's launcher passes them. A call binds the dynamic
extents from the tensors' shapes, packs the scalar struct, and dispatches
``threads = (groups_x * threads, groups_y, groups_z)`` with ``group_size = (threads, 1, 1)``
(torch dispatches in threads, Metal's ``dispatchThreads``), on torch's current MPS stream.

Needs macOS with a Metal device and torch built with MPS; elsewhere loading raises a LaunchError
that says so (CI checks the MSL instead: check.py).

Example::

    kernel = load_kernel("kernel.json")
    kernel(a, b, c)          # mps tensors
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from tilelang_core.errors import CompileError, LaunchError, NoDeviceError

from .compiler import FORMAT

#: MSL type of an argument slot -> struct format (every slot is 8 bytes: TVM's __TVMArgUnion)
_SLOT_FORMATS = {"int": "i", "uint": "I", "float": "f", "half": "e", "long": "q", "ulong": "Q",
                 "bool": "?", "short": "h", "ushort": "H", "char": "b", "uchar": "B"}


def evaluate(tree, env: dict) -> int:
    """A launch extent tree (compiler.expr_tree) with the call's sizes."""
    if isinstance(tree, int):
        return tree
    op, *rest = tree
    if op == "var":
        return int(env[rest[0]])
    a, b = (evaluate(x, env) for x in rest)
    return {"add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b if b else 0,
            "floormod": a % b if b else 0, "min": min(a, b), "max": max(a, b)}[op]


def pack_args(fields, env: dict) -> bytes:
    out = b""
    for name, ctype in fields:
        fmt = _SLOT_FORMATS.get(ctype)
        if fmt is None:
            raise LaunchError(f"scalar '{name}' has MSL type {ctype}, which tilelang-metal cannot pack")
        slot = struct.pack("<" + fmt, env[name])
        out += slot + bytes(8 - len(slot))
    return out


class MetalKernel:
    """One compiled kernel; ``kernel(*params)``."""

    def __init__(self, artifact: dict, library):
        self.artifact = artifact
        self.name = artifact["entry"]
        self._function = getattr(library, artifact["kernel"])
        self._params = artifact["params"]

    def _env(self, values: dict) -> dict:
        env = {name: v for name, v in values.items() if not hasattr(v, "shape")}
        for var, (param, axis) in self.artifact["shape_vars"].items():
            env[var] = int(values[param].shape[axis])
        return env

    def __call__(self, *args):
        import torch

        if len(args) != len(self._params):
            raise LaunchError(f"kernel '{self.name}' takes {len(self._params)} arguments "
                              f"({', '.join(self._params)}), got {len(args)}")
        values = dict(zip(self._params, args))
        env = self._env(values)
        bound = [values[name] for name in self.artifact["buffers"]]
        spec = self.artifact["args"]
        if spec is not None:
            packed = pack_args(spec["fields"], env)
            bound.append(torch.frombuffer(bytearray(packed), dtype=torch.uint8).to("mps"))
        groups = [evaluate(g, env) for g in self.artifact["grid"]]
        if min(groups) <= 0:
            return  # an empty grid: nothing to do (Metal rejects empty dispatches)
        threads = self.artifact["threads"]
        self._function(*bound, threads=[groups[0] * threads, groups[1], groups[2]],
                       group_size=[threads, 1, 1])


def load_kernel(path: str | Path) -> MetalKernel:
    path = Path(path)
    try:
        artifact = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CompileError(f"cannot read metal artifact {path}: {exc}; recompile the kernel") from exc
    if artifact.get("format") != FORMAT:
        raise CompileError(f"{path} is not a {FORMAT} artifact (format {artifact.get('format')!r}); recompile")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not getattr(torch.backends, "mps", None) or not torch.backends.mps.is_available():
        raise NoDeviceError(f"kernel '{artifact['entry']}' needs macOS with a Metal device and torch built "
                          f"with MPS (torch.backends.mps.is_available() is False here); its MSL is in "
                          f"kernel.get_kernel_source()")
    try:
        library = torch.mps.compile_shader(artifact["source"])
    except Exception as exc:
        raise CompileError(f"the Metal compiler rejected kernel '{artifact['entry']}'", log=str(exc)) from exc
    return MetalKernel(artifact, library)
