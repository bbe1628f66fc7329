"""``kernel.get_profiler()``: time a compiled kernel and check it against a reference.

TileLang's Profiler API, on top of :func:`tilelang_core.profiler.do_bench`::

    kernel = matmul(1024, 1024, 1024)                      # out_idx=[-1]
    profiler = kernel.get_profiler(tensor_supply_type=TensorSupplyType.Randn)
    profiler.assert_allclose(lambda a, b: a @ b, atol=1e-2, rtol=1e-2)   # fresh inputs each call
    ms = profiler.do_bench()                               # the kernel, mean ms
    ref_ms = profiler.do_bench(lambda a, b: a @ b)         # any function of the same inputs

Timing uses CUDA events (L2 flushed between runs; ``backend="cupti"`` or ``"cudagraph"`` as in
TileLang) for kernels whose backend runs on ``cuda`` tensors, and the CPU clock for the cpu
backend: the device comes from the kernel (``kernel.device_type``), never from a guess.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ..errors import ConfigError, ResultMismatchError
from .bench import measure
from .supply import TensorSupplyType, coerce_supply, make_inputs, make_tensor


class Profiler:
    """Times and checks one ``JITKernel``; made by ``kernel.get_profiler(...)``.

    ``tensor_supply_type`` says how inputs are drawn (``TensorSupplyType`` or its name);
    ``dynamic_shapes`` gives values to symbolic extents (``{'n': 1024}``; TileLang's
    ``dynamic_symbolic_constraints``).
    """

    def __init__(self, kernel, tensor_supply_type=TensorSupplyType.Auto,
                 dynamic_shapes: Mapping[str, int] | None = None):
        self.kernel = kernel
        self.supply_type = coerce_supply(tensor_supply_type)
        self.dynamic_shapes = dict(dynamic_shapes or {})
        self.device = getattr(kernel, "device_type", None) or "cpu"
        self._inputs: list | None = None

    # -- TileLang's attributes ----------------------------------------------------------------------
    @property
    def params(self) -> tuple:
        return self.kernel.params

    @property
    def result_idx(self) -> list[int]:
        return [p.index for p in self.kernel.params if p.is_output]

    @property
    def func(self):
        """The kernel itself (TileLang: the adapter that launches it)."""
        return self.kernel

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)

    def _get_params(self, with_output: bool = False) -> list:
        return [p for p in self.kernel.params if with_output or not p.is_output]

    # -- inputs -------------------------------------------------------------------------------------
    def make_inputs(self, with_output: bool = False, dynamic_shapes: Mapping[str, int] | None = None) -> list:
        """Fresh random tensors for the kernel's inputs (and outputs, ``with_output``), on the
        kernel's device."""
        shapes = {**self.dynamic_shapes, **(dynamic_shapes or {})}
        return make_inputs(self.kernel.params, self.supply_type, self.device, shapes, with_output)

    def _get_inputs(self, with_output: bool = False,
                    dynamic_symbolic_constraints: Mapping[str, int] | None = None) -> list:
        """The profiler's inputs: drawn once and reused by ``do_bench``/``run_once`` (drawing them
        is not what we measure). ``with_output`` or constraints draw a fresh set, as TileLang."""
        if with_output or dynamic_symbolic_constraints:
            return self.make_inputs(with_output, dynamic_symbolic_constraints)
        if self._inputs is None:
            self._inputs = self.make_inputs()
        return self._inputs

    # -- running ------------------------------------------------------------------------------------
    def run_once(self, func: Callable | None = None, input_tensors: Sequence | None = None):
        """Call the kernel (or ``func``) once on the profiler's inputs and return its result."""
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        return (func or self.kernel)(*ins)

    def _raw_call(self, ins: list) -> Callable[[], object]:
        """A zero-argument call of the compiled function with preallocated outputs, so that a
        benchmark measures the kernel and not argument checks or output allocation."""
        import torch

        self.kernel(*ins)  # full argument checks once; a wrong input fails here, with its message
        if not all(isinstance(a, torch.Tensor) for a in ins):
            return lambda: self.kernel(*ins)
        it = iter(ins)
        shapes = self._shape_values(ins)
        args = [make_tensor(p, TensorSupplyType.Zero, self.device, shapes) if p.is_output else next(it)
                for p in self.kernel.params]
        # a parameter the kernel never touches is not an argument of the compiled function
        args = [a for a, p in zip(args, self.kernel.params) if not p.unused]
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
                 return_mode: str = "mean", dynamic_symbolic_constraints: Mapping[str, int] | None = None,
                 device=None, early_stop_baseline: float | None = None, *, flush_l2: bool = True,
                 cuda_graph: bool = False):
        """Milliseconds per call of the kernel (``func=None``) or of ``func(*inputs)``; TileLang's
        signature.

        ``warmup``/``rep`` are time budgets in ms; ``n_warmup``/``n_repeat``, when positive, fix
        the counts instead. ``return_mode`` is mean (default), median, min or max;
        ``quantiles=[0.5, 0.2, 0.8]`` returns those. ``backend``: event, cupti or cudagraph (see
        :func:`tilelang_core.profiler.do_bench`). ``device`` (a CUDA index or device) overrides
        the kernel's device; ``dynamic_symbolic_constraints`` gives symbolic extents their values.
        """
        if backend == "torch":  # an older spelling this profiler accepted: CUDA events
            backend = "event"
        if input_tensors is not None:
            ins = list(input_tensors)
        elif dynamic_symbolic_constraints:
            ins = self.make_inputs(dynamic_shapes=dynamic_symbolic_constraints)
        else:
            ins = self._get_inputs()
        call = self._raw_call(ins) if func is None else (lambda: func(*ins))
        result = measure(call, device=self.device if device is None else device,
                         warmup_ms=float(warmup), rep_ms=float(rep), flush_l2=flush_l2,
                         cuda_graph=cuda_graph, n_warmup=n_warmup, n_repeat=n_repeat, backend=backend,
                         early_stop_baseline=early_stop_baseline)
        return result.summary(return_mode, quantiles)

    # -- checking -----------------------------------------------------------------------------------
    def _outputs_and_reference(self, reference_program: Callable, input_tensors: Sequence | None):
        if not any(p.is_output for p in self.kernel.params):
            raise ConfigError(f"comparing against a reference needs a kernel that returns its "
                              f"outputs: compile '{self.kernel.name}' with out_idx=[...]")
        ins = list(input_tensors) if input_tensors is not None else self.make_inputs()
        # the reference sees copies, so a reference that writes its inputs cannot hide a bug
        expected = reference_program(*[t.clone() if hasattr(t, "clone") else t for t in ins])
        got = self.kernel(*ins)
        return got, expected

    def assert_allclose(self, reference_program: Callable, input_tensors: Sequence | None = None,
                        atol: float = 1e-2, rtol: float = 1e-2, max_mismatched_ratio: float = 0.01):
        """Run the kernel and ``reference_program`` on the same FRESH random inputs and raise
        ``ResultMismatchError`` (an AssertionError) when more than ``max_mismatched_ratio`` of an
        output's elements differ by more than ``atol + rtol * |reference|``.

        The reference gets the inputs (not the outputs) and returns the expected output(s); as in
        TileLang, an output the reference returns as None is not compared.
        """
        got, expected = self._outputs_and_reference(reference_program, input_tensors)
        compare_outputs(self.kernel, got, expected, atol, rtol, max_mismatched_ratio)

    def manual_assert_close(self, reference_program: Callable, input_tensors: Sequence | None = None,
                            manual_check_prog: Callable | None = None):
        """TileLang's custom check: ``manual_check_prog(kernel_outputs, reference_outputs)`` (two
        lists) decides, by raising, whether the kernel is right."""
        if manual_check_prog is None:
            raise ConfigError("manual_assert_close needs manual_check_prog=f(outputs, ref_outputs)")
        got, expected = self._outputs_and_reference(reference_program, input_tensors)
        manual_check_prog(_as_list(got), _as_list(expected))

    def assert_consistent(self, repeat: int = 10):
        """Run the kernel ``repeat`` more times on the same inputs and require the same outputs
        every time (a race shows up as run-to-run differences)."""
        import torch

        ins = self._get_inputs()
        first = [o.clone() for o in _as_list(self.kernel(*ins))]
        for run in range(repeat):
            for i, (a, b) in enumerate(zip(_as_list(self.kernel(*ins)), first)):
                if not torch.equal(a, b):
                    raise ResultMismatchError(f"kernel '{self.kernel.name}' output {i} changed between "
                                              f"runs on the same inputs (run {run + 1} of {repeat}): "
                                              f"a race or an uninitialized read")


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def compare_outputs(kernel, got, expected, atol: float, rtol: float,
                    max_mismatched_ratio: float = 0.01) -> None:
    """Raise ResultMismatchError unless every output of ``kernel`` matches ``expected``: at most
    ``int(numel * max_mismatched_ratio)`` elements outside ``atol + rtol * |expected|`` (TileLang's
    ``torch_assert_close`` rule, compared in float64 whatever the two dtypes)."""
    import torch

    from ..utils.tensor import close_mask

    outs = [p for p in kernel.params if p.is_output]
    got, expected = _as_list(got), _as_list(expected)
    if len(got) != len(expected):
        raise ResultMismatchError(f"kernel '{kernel.name}' returns {len(got)} output(s) but the "
                                  f"reference returned {len(expected)}; make the reference return "
                                  f"one value per out_idx entry")
    for p, g, e in zip(outs, got, expected):
        if g is None or e is None:  # TileLang: a None reference output is not checked
            continue
        g = torch.as_tensor(g).detach().cpu().double()
        e = torch.as_tensor(e).detach().cpu().double()
        if g.shape != e.shape:
            raise ResultMismatchError(f"kernel '{kernel.name}' output '{p.name}' has shape "
                                      f"{tuple(g.shape)}, the reference {tuple(e.shape)}")
        bad = ~close_mask(g, e, rtol, atol, equal_nan=True)
        count = int(bad.sum())
        if count > int(e.numel() * max_mismatched_ratio):
            first = tuple(int(i) for i in bad.nonzero()[0])
            diff = (g - e).abs()
            finite = diff[~diff.isnan()]
            worst = float(finite.max()) if finite.numel() else float("nan")
            raise ResultMismatchError(
                f"kernel '{kernel.name}' output '{p.name}': {count} of {e.numel()} elements "
                f"({100.0 * count / max(1, e.numel()):.2f}%) differ from the reference beyond "
                f"atol={atol}, rtol={rtol} (allowed {100 * max_mismatched_ratio:.2f}%); first at "
                f"index {first}: got {float(g[first])}, expected {float(e[first])}; max abs error "
                f"{worst:.4g}. Check the kernel (or loosen atol/rtol for low-precision dtypes)")
