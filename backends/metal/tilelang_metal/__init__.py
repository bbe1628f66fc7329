"""tilelang-metal: the TileLang-X backend for Apple GPUs (Metal).

Installing this package is all it takes: its entry point registers the `metal` target kind and
the MetalBackend with tilelang-core, and `target="auto"` finds the device on Apple silicon.

Stages (pipeline.py): the SIMT kit's lowering with Metal's knobs and a simdgroup_matrix gemm ->
MSL through TVM's Metal codegen (codegen.py says why ours is not a separate emitter) -> a JSON
artifact of MSL and launch parameters -> ``torch.mps.compile_shader`` on macOS (runtime.py).
Off macOS, CI verifies the MSL with clang-19 and a shim header (check.py) and the lowering with
a CPU interpreter (interpreter.py); backends/metal/README.md lists what stays unverified.
"""

__version__ = "0.1.0"
