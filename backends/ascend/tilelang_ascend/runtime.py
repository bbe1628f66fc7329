"""Load a bisheng-built kernel library and launch it on torch_npu tensors.

The library exports ``<name>_launch(stream, args..., workspace)``, ``<name>_num_blocks()`` and
``<name>_workspace_bytes()`` (see codegen.py). Launch goes through ctypes on the current torch_npu
stream (``torch_npu.npu.current_stream().npu_stream``), with the tensors' device pointers and a
workspace tensor allocated on the same device.

The JIT driver finds the kernel through ``get_function(name)`` (the protocol of
``tilelang_core.runtime.entry_function``): it gets an ``AscendKernelFunction`` called with every
parameter, outputs already allocated on the NPU by JITKernel.

NOT RUN HERE: no NPU and no torch_npu on this machine; written against the public torch_npu and
Ascend C kernel-launch documentation. The symbol lookup and the argument checks before launch are
tested with a host library exporting the same symbols (tests/test_ascend_jit.py).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from tilelang_core.errors import LaunchError


class AscendModule:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.lib = ctypes.CDLL(str(self.path))

    def get_function(self, name: str):
        """The launcher of kernel ``name``; AttributeError when the library has no such kernel
        (entry_function then tries ``main``, then names both in its LaunchError)."""
        try:
            launch = getattr(self.lib, f"{name}_launch")
            blocks = getattr(self.lib, f"{name}_num_blocks")
            ws_bytes = getattr(self.lib, f"{name}_workspace_bytes")
        except AttributeError as exc:
            raise AttributeError(f"{self.path} has no Ascend kernel '{name}' ({exc})") from None
        blocks.restype = ctypes.c_uint32
        ws_bytes.restype = ctypes.c_uint32
        return AscendKernelFunction(name, launch, int(ws_bytes()))


class AscendKernelFunction:
    def __init__(self, name, launch, workspace_bytes):
        self.name, self.launch, self.workspace_bytes = name, launch, workspace_bytes

    def __call__(self, *tensors):
        try:
            import torch
            import torch_npu  # noqa: F401  (registers the npu device)
        except ImportError:
            raise LaunchError("running Ascend kernels needs torch_npu: pip install torch_npu "
                              "(matching your torch and CANN)") from None
        for i, t in enumerate(tensors):
            if getattr(t, "device", None) is None or t.device.type != "npu":
                raise LaunchError(f"kernel '{self.name}' argument {i} must be an npu tensor, got "
                                  f"{getattr(t, 'device', type(t).__name__)}")
        device = tensors[0].device
        workspace = torch.empty(max(self.workspace_bytes, 1), dtype=torch.uint8, device=device)
        stream = torch.npu.current_stream(device).npu_stream
        args = [ctypes.c_void_p(stream)] + [ctypes.c_void_p(t.data_ptr()) for t in tensors]
        self.launch(*args, ctypes.c_void_p(workspace.data_ptr()))


def load_module(path: Path) -> AscendModule:
    return AscendModule(path)
