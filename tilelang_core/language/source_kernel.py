"""``T.CUDASourceCodeKernel``: TileLang's kernel written in CUDA C++ by hand, launched like a tile
kernel (argument checks, the grid, the stream) with the kernel's parameters.

    @T.prim_func
    def copy(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        T.CUDASourceCodeKernel(T.ceildiv(N, 128), threads=128, source_code_or_path=SRC,
                               entry_name="external_copy")

The source (a string, or the path of a file holding it) declares the ``__global__`` entry. Here the
entry becomes a ``__device__`` function of the source's own text (renamed ``tl_source_<entry>``,
so that it cannot clash with the kernel's name) that a one-statement kernel calls with the grid
and block of the call: inside it ``blockIdx``/``threadIdx``/``blockDim``/``gridDim`` mean what they
mean in a launch of the entry. The entry takes, in order, each parameter of the kernel (a tensor's
data pointer, a scalar's value), then each dynamic dimension of the tensors that is not a
parameter, in the order they first appear (``external_copy(float* A, float* B, int n)`` for the
kernel above). The source is compiled as the kernel's (nvcc or NVRTC, with the cuda backend's
headers); it only runs on the cuda backend, which refuses other targets by name (T.import_source).
"""

from __future__ import annotations

import os
import re

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir.import_source import imported_sources
from ..transform.structural import structural_map, structural_walk
from .kernel import Kernel, import_source

#: ``__global__ void name(``, with ``__launch_bounds__(...)`` before or after ``void``: the entries
_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s+)?"
_GLOBAL = re.compile(rf"__global__\s+{_BOUNDS}void\s+{_BOUNDS}([A-Za-z_]\w*)\s*\(")
ENTRY_PREFIX = "tl_source_"  # the entry's name as a __device__ function
_SOURCE_SUFFIXES = (".cu", ".cuh", ".cuda", ".cpp", ".cc", ".c", ".h", ".hpp")


def load_source(source_code_or_path) -> str:
    """The source text: a file's contents where ``source_code_or_path`` names an existing file,
    else the string itself (a string that looks like a path of a missing file is refused)."""
    if isinstance(source_code_or_path, os.PathLike):
        source_code_or_path = os.fspath(source_code_or_path)
    if not isinstance(source_code_or_path, str) or not source_code_or_path.strip():
        raise FrontendError("T.CUDASourceCodeKernel: source_code_or_path must be CUDA source or the path of "
                            f"a file holding it, got {source_code_or_path!r}")
    text = source_code_or_path
    path = os.path.expanduser(text)
    if "\n" not in text and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return f.read()
    if "\n" not in text and "__global__" not in text and (os.sep in text or text.endswith(_SOURCE_SUFFIXES)):
        raise FrontendError(f"T.CUDASourceCodeKernel: CUDA source file not found: {text}")
    return text


def entries(source: str) -> list[str]:
    """The ``__global__`` functions ``source`` defines or declares, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in _GLOBAL.finditer(source)))


def as_device_function(source: str, entry: str, name: str) -> str:
    """``source`` with ``entry`` a ``__device__`` function called ``name`` (launch bounds dropped:
    the block size is the kernel's)."""
    body = re.sub(rf"__global__(\s+){_BOUNDS}(void\s+){_BOUNDS}{entry}(\s*\()", rf"__device__\1\2{entry}\3", source)
    return re.sub(rf"\b{entry}\b", name, body)


def _arguments(func) -> list:
    """The entry's arguments (module doc): parameters in order, then the dynamic dimensions."""
    args, seen, tensors = [], set(), [p for p in func.params if tirx.is_buffer_var(p)]
    for param in func.params:
        if tirx.is_buffer_var(param):  # its first element's address: the data pointer, as lowered
            args.append(tirx.address_of(tirx.BufferLoad(param, [tirx.const(0, "int32")] * len(param.shape))))
        else:
            args.append(param)
            seen.add(param.__chandle__())
    for tensor in tensors:
        for dim in tensor.shape:
            if isinstance(dim, tvm.ir.Var) and dim.__chandle__() not in seen:
                args.append(dim)
                seen.add(dim.__chandle__())
    return args


def bind_arguments(func):
    """``func`` with its T.CUDASourceCodeKernel launch passing the entry its arguments (known once
    the function's parameters are: the parse calls this on the finished PrimFunc)."""
    if not imported_sources(func):  # (every launch imports its source: other kernels are not walked)
        return func
    found = []

    def is_launch(call) -> bool:
        return call.op.name == "tirx.call_extern" and len(call.args) == 1 and \
            str(call.args[0].value).startswith(ENTRY_PREFIX)

    structural_walk(func.body, [(tirx.Call, lambda c: found.append(c) if is_launch(c) else None)])
    if not found:
        return func
    args = _arguments(func)

    def bind(call):
        return tirx.call_extern("void", str(call.args[0].value), *args) if is_launch(call) else call

    return func.with_body(structural_map(func.body, [(tirx.Call, bind)]))


def CUDASourceCodeKernel(*blocks, threads=None, source_code_or_path=None, entry_name: str = "main_kernel",
                         cluster_dims=None, prelude: str | None = None) -> None:
    """Launch the ``__global__`` function ``entry_name`` of hand-written CUDA source over the grid
    ``blocks`` with ``threads`` per block (module doc: what it is passed). ``prelude``: more
    source put before it."""
    if cluster_dims is not None:
        raise FrontendError("T.CUDASourceCodeKernel(cluster_dims=...) is not supported: write a T.ClusterKernel, "
                            "or launch the source's kernel without clusters")
    if source_code_or_path is None:
        raise FrontendError("T.CUDASourceCodeKernel needs source_code_or_path= (CUDA source or its file)")
    source = load_source(source_code_or_path)
    if prelude is not None:
        source = f"{prelude}\n{source}"
    if not isinstance(entry_name, str) or not entry_name.strip():
        raise FrontendError(f"T.CUDASourceCodeKernel: entry_name must name a __global__ function, got {entry_name!r}")
    found = entries(source)
    if not found:
        raise FrontendError("T.CUDASourceCodeKernel: the source declares no __global__ function to launch")
    if entry_name not in found:
        raise FrontendError(f"T.CUDASourceCodeKernel: no __global__ function '{entry_name}' in the source. "
                            f"Available entries: {', '.join(found)}")
    name = f"{ENTRY_PREFIX}{entry_name}"
    with Kernel(*blocks, threads=128 if threads is None else threads):
        import_source(as_device_function(source, entry_name, name))
        B.evaluate(tirx.call_extern("void", name))  # (its arguments: bind_arguments, after the parse)


__all__ = ["CUDASourceCodeKernel", "bind_arguments"]
