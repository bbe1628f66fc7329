"""``kernel.get_profiler()``: time a compiled kernel and check it against a reference.

TileLang's Profiler API, on top of :func:`tilelang_core.profiler.do_bench`::

    kernel = matmul(1024, 1024, 1024)                      # out_idx=[-1]
    profiler = kernel.get_profiler(tensor_supply_type=TensorSupplyType.Randn)
    profiler.assert_allclose(lambda a, b: a @ b, atol=1e-2, rtol=1e-2)   # fresh inputs each call
    ms = profiler.do_bench()                               # the kernel, median ms
    ref_ms = profiler.do_bench(lambda a, b: a @ b)         # any function of the same inputs

Timing uses CUDA events (L2 flushed between runs, optional CUDA graph replay) for kernels whose
backend runs on ``cuda`` tensors, and the CPU clock for the cpu backend: the device comes from the
kernel (``kernel.device_type``), never from a guess.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ..errors import ConfigError, ResultMismatchError
from .bench import measure
from .supply import TensorSupplyType, make_inputs


class Profiler:
    """Times and checks one ``JITKernel``; made by ``kernel.get_profiler(...)``.

    ``tensor_supply_type`` says how inputs are drawn (``TensorSupplyType`` or its name);
    ``dynamic_shapes`` gives values to symbolic extents (``{'n': 1024}``).
    """

    def __init__(self, kernel, tensor_supply_type=TensorSupplyType.Auto,
                 dynamic_shapes: Mapping[str, int] | None = None):
        self.kernel = kernel
        self.supply_type = tensor_supply_type
        self.dynamic_shapes = dict(dynamic_shapes or {})
        self.device = getattr(kernel, "device_type", None) or "cpu"
        self._inputs: list | None = None

    # -- inputs -------------------------------------------------------------------------------------
    def make_inputs(self) -> list:
        """Fresh random tensors for the kernel's inputs, on the kernel's device."""
        return make_inputs(self.kernel.params, self.supply_type, self.device, self.dynamic_shapes)

    def _get_inputs(self, input_tensors: Sequence | None = None) -> list:
        # timing reuses one set of inputs (drawing them is not what we measure)
        if input_tensors is not None:
            return list(input_tensors)
        if self._inputs is None:
            self._inputs = self.make_inputs()
        return self._inputs

    # -- running ------------------------------------------------------------------------------------
    def run_once(self, func: Callable | None = None, input_tensors: Sequence | None = None):
        """Call the kernel (or ``func``) once on the profiler's inputs and return its result."""
        ins = self._get_inputs(input_tensors)
        return (func or self.kernel)(*ins)

    def _raw_call(self, ins: list) -> Callable[[], object]:
        """A zero-argument call of the compiled function with preallocated outputs, so that a
        benchmark measures the kernel and not argument checks or output allocation."""
        import torch

        self.kernel(*ins)  # full argument checks once; a wrong input fails here, with its message
        from .supply import make_tensor

        it = iter(ins)
        args = [make_tensor(p, TensorSupplyType.Zero, self.device, self._shape_values(ins))
                if p.is_output else next(it) for p in self.kernel.params]
        if not all(isinstance(a, torch.Tensor) for a in ins):
            return lambda: self.kernel(*ins)
        function = self.kernel.function
        return lambda: function(*args)

    def _shape_values(self, ins: list) -> dict:
        # symbolic extents of outputs follow the inputs that bind them
        values = dict(self.dynamic_shapes)
        it = iter(ins)
        for p in self.kernel.params:
            if p.is_output:
                continue
            value = next(it)
            for extent, got in zip(p.shape, getattr(value, "shape", ())):
                if isinstance(extent, str) and extent.isidentifier():
                    values.setdefault(extent, int(got))
        return values

    def do_bench(self, func: Callable | None = None, warmup: float = 25, rep: float = 100,
                 n_warmup: int = 0, n_repeat: int = 0, input_tensors: Sequence | None = None,
                 backend: str = "event", quantiles: Sequence[float] | None = None,
                 return_mode: str = "median", flush_l2: bool = True, cuda_graph: bool = False):
        """Milliseconds per call of the kernel (``func=None``) or of ``func(*inputs)``.

        ``warmup``/``rep`` are time budgets in ms (TileLang's names); ``n_warmup``/``n_repeat``,
        when positive, fix the counts instead. ``quantiles=[0.5, 0.2, 0.8]`` returns a list.
        ``backend`` is accepted for TileLang compatibility; only ``"event"`` (CUDA events, or the
        CPU clock on cpu kernels) exists.
        """
        if backend not in ("event", "torch"):
            raise ConfigError(f"do_bench(backend={backend!r}): only 'event' timing is implemented")
        ins = self._get_inputs(input_tensors)
        call = self._raw_call(ins) if func is None else (lambda: func(*ins))
        if n_warmup > 0:  # an explicit warm-up count replaces the warm-up time budget
            for _ in range(n_warmup):
                call()
            warmup = 0
        counts = {} if n_repeat <= 0 else {"min_reps": n_repeat, "max_reps": n_repeat}
        result = measure(call, device=self.device, warmup_ms=float(warmup), rep_ms=float(rep),
                         flush_l2=flush_l2, cuda_graph=cuda_graph, **counts)
        if quantiles is not None:
            return [result.quantile(q) for q in quantiles]
        modes = {"median": lambda: result.median, "mean": lambda: result.mean,
                 "min": lambda: result.min, "max": lambda: max(result.times_ms)}
        if return_mode not in modes:
            raise ConfigError(f"return_mode must be one of {', '.join(modes)}, got {return_mode!r}")
        return modes[return_mode]()

    # -- checking -----------------------------------------------------------------------------------
    def assert_allclose(self, reference_program: Callable, input_tensors: Sequence | None = None,
                        atol: float = 1e-2, rtol: float = 1e-2, max_mismatched_ratio: float = 0.01):
        """Run the kernel and ``reference_program`` on the same FRESH random inputs and raise
        ``ResultMismatchError`` (an AssertionError) when more than ``max_mismatched_ratio`` of an
        output's elements differ by more than ``atol + rtol * |reference|``.

        The reference gets the inputs (not the outputs) and returns the expected output(s).
        """
        if not any(p.is_output for p in self.kernel.params):
            raise ConfigError(f"assert_allclose needs a kernel that returns its outputs: compile "
                              f"'{self.kernel.name}' with out_idx=[...]")
        ins = list(input_tensors) if input_tensors is not None else self.make_inputs()
        # the reference sees copies, so a reference that writes its inputs cannot hide a bug
        expected = reference_program(*[t.clone() if hasattr(t, "clone") else t for t in ins])
        got = self.kernel(*ins)
        compare_outputs(self.kernel, got, expected, atol, rtol, max_mismatched_ratio)


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def compare_outputs(kernel, got, expected, atol: float, rtol: float,
                    max_mismatched_ratio: float = 0.01) -> None:
    """Raise ResultMismatchError unless every output of ``kernel`` matches ``expected``."""
    import torch

    outs = [p for p in kernel.params if p.is_output]
    got, expected = _as_list(got), _as_list(expected)
    if len(got) != len(expected):
        raise ResultMismatchError(f"kernel '{kernel.name}' returns {len(got)} output(s) but the "
                                  f"reference returned {len(expected)}; make the reference return "
                                  f"one value per out_idx entry")
    for p, g, e in zip(outs, got, expected):
        g = torch.as_tensor(g).detach().cpu().double()
        e = torch.as_tensor(e).detach().cpu().double()
        if g.shape != e.shape:
            raise ResultMismatchError(f"kernel '{kernel.name}' output '{p.name}' has shape "
                                      f"{tuple(g.shape)}, the reference {tuple(e.shape)}")
        diff = (g - e).abs()
        bad = ~(diff <= atol + rtol * e.abs())
        bad &= ~(g.isnan() & e.isnan())
        count = int(bad.sum())
        if count > max_mismatched_ratio * max(1, e.numel()):
            first = tuple(int(i) for i in bad.nonzero()[0])
            finite = diff[~diff.isnan()]
            worst = float(finite.max()) if finite.numel() else float("nan")
            raise ResultMismatchError(
                f"kernel '{kernel.name}' output '{p.name}': {count} of {e.numel()} elements "
                f"({100.0 * count / max(1, e.numel()):.2f}%) differ from the reference beyond "
                f"atol={atol}, rtol={rtol} (allowed {100 * max_mismatched_ratio:.2f}%); first at "
                f"index {first}: got {float(g[first])}, expected {float(e[first])}; max abs error "
                f"{worst:.4g}. Check the kernel (or loosen atol/rtol for low-precision dtypes)")
