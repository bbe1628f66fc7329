"""``@jit`` in both TileLang styles, with and without parentheses.

LAZY: the decorated function is a factory that returns a ``T.prim_func``; calling it with
compile-time arguments returns a ``JITKernel`` (memoized per arguments)::

    @jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), ...): ...
        return main

    kernel = matmul(1024, 1024, 1024)
    c = kernel(a, b)

EAGER: the decorated function is the kernel itself; calling it on tensors specializes on their
shapes/dtypes and the compile-time arguments, compiles once, launches and returns the outputs::

    @jit
    def add(A, B, block_M: int = 128):
        ...
        C = T.empty(...)
        return C

    c = add(a, b)

How the style is chosen (``mode="auto"``), without running user code: the function's source is
parsed and it is LAZY when its body defines a nested function decorated with ``...prim_func``
(``@T.prim_func``, ``@prim_func``, ``@T.prim_func(...)``), EAGER when it launches a kernel itself
(``T.Kernel``), makes outputs (``T.empty``) or declares tensors (``A: T.Tensor[...]``), and LAZY
otherwise (a factory returning what a helper built: TileLang calls the function and finds a
PrimFunc). Without source (a lambda
built at run time, a REPL without history) it is LAZY, since eager specialization reads the source
anyway. A lazy function that returns something other than a PrimFunc raises a ConfigError that
points to ``mode="eager"``; pass ``mode="lazy"``/``"eager"`` to skip detection.
"""

from __future__ import annotations

import ast
import functools
import inspect
import operator
import textwrap
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from .. import config
from ..errors import ConfigError
from ..target import Target
from .compiler import compile as _compile

if TYPE_CHECKING:  # pragma: no cover - only for annotations; kernel.py imports numpy/torch
    from .kernel import JITKernel

MODES = ("auto", "lazy", "eager")

#: TileLang's execution backends (how a compiled kernel is called from Python). Each of our
#: backends launches through its own tvm-ffi runtime, so the choice changes nothing here; the names
#: are accepted so that ported code runs unchanged, and anything else is refused.
EXECUTION_BACKENDS = (None, "auto", "tvm_ffi", "cython", "nvrtc", "torch", "cutedsl")


def check_tilelang_options(where: str, execution_backend=None, target_host=None) -> None:
    """Refuse the TileLang compile options we cannot honour, naming them."""
    if execution_backend not in EXECUTION_BACKENDS:
        raise ConfigError(f"{where}(execution_backend={execution_backend!r}) is not one of "
                          f"{', '.join(str(b) for b in EXECUTION_BACKENDS[1:])}")
    if target_host is not None:
        raise ConfigError(f"{where}(target_host={target_host!r}): the target's backend builds its own "
                          f"host side here; drop target_host")

# Entries of EagerJIT's per-call memo before it starts over: keys keep exact shapes, so a kernel
# with dynamic extents gains one per size seen; a bound keeps a long-running loop's memory flat.
_CALL_MEMO_LIMIT = 4096


def detect_mode(fn: Callable) -> str:
    """'lazy' or 'eager' for a function, by the rule in this module's docstring."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return "lazy"
    top = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.name == fn.__name__), None)
    if top is None:
        return "lazy"
    for node in ast.walk(top):
        if node is top or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if _name_of(deco.func if isinstance(deco, ast.Call) else deco) == "prim_func":
                return "lazy"
    # an eager kernel launches (``with T.Kernel(...)``), makes its outputs (``T.empty``) or declares
    # tensors (``A: T.Tensor[...]``); a function doing none of these is a factory returning a
    # PrimFunc some helper built (TileLang calls it and finds a PrimFunc: lazy)
    annotations = [a.annotation for a in top.args.args + top.args.kwonlyargs if a.annotation is not None]
    for node in ast.walk(top):
        if isinstance(node, ast.Call) and _name_of(node.func) in ("Kernel", "empty"):
            return "eager"
        if isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    if any(_name_of(n) in ("Tensor", "Buffer", "StridedTensor") for a in annotations for n in ast.walk(a)):
        return "eager"
    return "lazy"


def _name_of(node) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _freeze(value):
    # compile-time arguments -> a hashable key; lists/dicts become tuples
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("unhashable", type(value).__name__, repr(value))
    return value


class _JITBase:
    def __init__(self, fn: Callable, out_idx, target, pass_configs, backend):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.out_idx = out_idx
        self.target = target
        self.pass_configs = dict(pass_configs) if pass_configs else None
        self._backend = backend
        self._kernels: dict = {}
        self._lock = threading.Lock()
        self._auto = target in (None, "auto")  # the memo keys need _ambient() only then

    def __getstate__(self):
        # a copy in another process (Ray's cloudpickle) compiles afresh: the memo of loaded
        # kernels and its lock stay here
        state = dict(self.__dict__)
        state.pop("_lock", None)
        state["_kernels"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _ambient(self):
        """What target='auto' may resolve differently from call to call: the innermost
        ``with Target(...)`` and TILELANG_TARGET (probed devices do not change in a process).
        Part of the memo key, so a kernel built for one target is not returned for another."""
        if not self._auto:
            return None
        return Target.current(), config.target_override_text()

    def _compile_func(self, func, out_idx) -> JITKernel:
        return _compile(func, out_idx=out_idx, target=self.target, pass_configs=self.pass_configs,
                        _backend=self._backend)

    def par_compile(self, configs, num_workers: int | None = None, ignore_error: bool = False) -> list:
        """TileLang's ``JITImpl.par_compile``: one kernel per config (a dict of keyword arguments
        or a tuple of positional ones), in order. They compile one after another here (lowering
        holds the GIL; the autotuner's process pool is the parallel path); ``num_workers`` is
        accepted for the signature. ``ignore_error=True`` puts None (and a warning) where a config
        fails instead of raising."""
        from .compiler import compile_each

        del num_workers
        for cfg in configs:
            if not isinstance(cfg, (dict, tuple)):
                raise ConfigError(f"par_compile config {cfg!r}: give a dict of keyword arguments or a "
                                  f"tuple of positional ones")
        return compile_each(configs, lambda cfg: self.compile(**cfg) if isinstance(cfg, dict) else self.compile(*cfg),
                            f"'{self.fn.__name__}' with", ignore_error)

    def get_kernel_source(self, *args, **kwargs) -> str:
        """The source of the kernel these arguments compile to (TileLang's
        ``JITImpl.get_kernel_source``): ``self.compile(*args, **kwargs).get_kernel_source()``, for
        this function's target (``target="auto"``: the one a call would use now). Eager functions
        take tensors or, as in ``compile``, sizes: ``f.get_kernel_source(M=128, N=128, K=64)``.
        The device code, as TileLang's; ``kernel_only=False``: with the host wrapper
        (JITKernel.get_kernel_source)."""
        kernel_only = kwargs.pop("kernel_only", True)
        return self.compile(*args, **kwargs).get_kernel_source(kernel_only=kernel_only)


class LazyJIT(_JITBase):
    """``@jit`` on a factory returning a PrimFunc; ``f(*compile_time_args)`` -> JITKernel."""

    mode = "lazy"

    def __call__(self, *args, **kwargs) -> JITKernel:
        key = ((args, tuple(sorted(kwargs.items()))) if kwargs else args,
               self._ambient() if self._auto else None)
        try:
            kernel = self._kernels.get(key)
        except TypeError:  # unhashable compile-time argument
            key = (_freeze((args, kwargs)), key[1])
            kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self.compile(*args, **kwargs)
            with self._lock:
                kernel = self._kernels.setdefault(key, kernel)
        return kernel

    def get_tir(self, *args, **kwargs):
        """The PrimFunc the factory returns for these arguments (not compiled)."""
        import tvm

        func = self.fn(*args, **kwargs)
        if not isinstance(func, tvm.tirx.PrimFunc):
            raise ConfigError(f"@jit function '{self.fn.__name__}' returned "
                              f"{type(func).__name__}, not a T.prim_func; a lazy @jit function "
                              f"must return the prim_func it builds (for a kernel written directly "
                              f"on tensors use @jit(mode='eager'))")
        return func

    def compile(self, *args, **kwargs) -> JITKernel:
        """Compile without memoizing by call form (the content-keyed caches still apply)."""
        return self._compile_func(self.get_tir(*args, **kwargs), self.out_idx)

    get_kernel = __call__


class EagerJIT(_JITBase):
    """``@jit`` on a kernel written on tensors; ``f(a, b)`` compiles once per specialization,
    launches and returns the outputs."""

    mode = "eager"

    def __init__(self, fn, out_idx, target, pass_configs, backend, program_factory=None):
        super().__init__(fn, out_idx, target, pass_configs, backend)
        self._program_factory = program_factory
        self._program = None
        self._signature = inspect.signature(fn)
        # Positional calls skip cache_key (~2 us): the program's positional_key (exact shapes and
        # dtypes, compile-time values; ~0.3 us) -> (the kernel's launch function, picker or None).
        self._call_key = None
        self._call_key_made = False
        self._by_call: dict = {}

    def __getstate__(self):
        state = super().__getstate__()
        state.update(_call_key=None, _call_key_made=False, _by_call={})
        return state

    @property
    def program(self):
        if self._program is None:
            factory = self._program_factory
            if factory is None:
                from ..language.eager import EagerProgram as factory
            self._program = factory(self.fn)
        return self._program

    def _lookup(self, args, kwargs):
        """(kernel, argument picker) for this call form, specializing on first sight."""
        program = self._program or self.program
        key = (program.cache_key(args, kwargs), len(args), tuple(kwargs) if kwargs else (), self._ambient())
        hit = self._kernels.get(key)
        if hit is None:
            hit = self._specialize(args, kwargs)
            with self._lock:
                hit = self._kernels.setdefault(key, hit)
        return hit

    def __call__(self, *args, **kwargs):
        if not kwargs and self._call_key is not None:
            try:
                key = self._call_key(args)
                hit = self._by_call.get((key, self._ambient()) if self._auto else key)
            except Exception:  # noqa: BLE001 - arguments that only the full route explains
                hit = None
            if hit is not None:
                launch, pick = hit
                return launch(args) if pick is None else launch(pick(args, kwargs))
        kernel, pick = self._lookup(args, kwargs)
        if not kwargs:
            self._remember(args, kernel, pick)
        return kernel._launch(pick(args, kwargs))

    def _remember(self, args: tuple, kernel: JITKernel, pick):
        if not self._call_key_made:
            make = getattr(self.program, "positional_key", None)  # a custom program may lack it
            self._call_key = make() if make is not None else None
            self._call_key_made = True
        if self._call_key is None:
            return
        try:
            key = self._call_key(args)
            hash(key)
        except Exception:  # noqa: BLE001 - e.g. an unhashable compile-time value: no memo entry
            return
        if key is None:
            return
        if self._auto:
            key = (key, self._ambient())
        if len(self._by_call) >= _CALL_MEMO_LIMIT:
            self._by_call.clear()
        self._by_call[key] = (kernel._launch, None if pick is _all_args else pick)

    def compile(self, *args, **kwargs) -> JITKernel:
        """The JITKernel these arguments specialize to, without launching it (memoized like a
        call): ``kernel = f.compile(a, b); kernel.get_kernel_source()``. As in TileLang, sizes
        may replace the tensors: ``f.compile(M=1024, N=1024, K=1024, block_M=128)``."""
        args, kwargs = self.program.tensors_from_consts(args, kwargs)
        return self._lookup(args, kwargs)[0]

    get_kernel = compile

    def get_tir(self, *args, **kwargs):
        """The PrimFunc these arguments specialize to (not compiled); tensors or sizes, as in
        ``compile``."""
        args, kwargs = self.program.tensors_from_consts(args, kwargs)
        return self.program.specialize(args, kwargs).func

    def _specialize(self, args: tuple, kwargs: Mapping[str, Any]):
        spec = self.program.specialize(args, kwargs)
        out_idx = self.out_idx if self.out_idx is not None else spec.out_idx
        kernel = self._compile_func(spec.func, out_idx)
        return kernel, self._picker(kernel, args, kwargs)

    def _picker(self, kernel: JITKernel, args: tuple, kwargs: Mapping[str, Any]):
        """Which call arguments feed the kernel's inputs, by parameter name; precomputed once per
        specialization so a call only indexes."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ConfigError(f"cannot call '{self.fn.__name__}' with these arguments: {exc}") from None
        positions = {name: i for i, name in enumerate(list(bound.arguments)[:len(args)])}
        sources = []
        for p in kernel.params:
            if p.is_output:
                continue
            if p.name in positions:
                sources.append(("pos", positions[p.name]))
            elif p.name in kwargs:
                sources.append(("kw", p.name))
            else:
                raise ConfigError(f"kernel '{kernel.name}' takes input '{p.name}', which is not an "
                                  f"argument of '{self.fn.__name__}'{self._signature}; name kernel "
                                  f"inputs after the function's parameters")
        indices = [i for kind, i in sources if kind == "pos"]
        if len(indices) == len(sources):
            if indices == list(range(len(args))):
                return _all_args
            if not indices:  # no inputs: a kernel of compile-time values and T.empty outputs only
                return lambda a, kw: ()
            if len(indices) == 1:
                only = indices[0]
                return lambda a, kw: (a[only],)
            getter = operator.itemgetter(*indices)
            return lambda a, kw: getter(a)
        return lambda a, kw: tuple(a[i] if kind == "pos" else kw[i] for kind, i in sources)


def _all_args(args, kwargs):
    """The picker of a kernel whose inputs are the call's positional arguments, in order."""
    return args


def jit(func: Callable | None = None, *, out_idx: Sequence[int] | int | None = None,
        target: Any = "auto", pass_configs: Mapping[str, Any] | None = None, mode: str = "auto",
        execution_backend: str | None = None, verbose: bool | None = None, target_host: Any = None,
        compile_flags=None, _backend: Any = None, _program_factory: Any = None):
    """Decorate a TileLang kernel factory (lazy) or kernel (eager); see the module docstring.

    Works with and without parentheses::

        @jit
        def k(...): ...

        @jit(out_idx=[-1], target="cuda", pass_configs={"tl.disable_tma_lower": True})
        def k(...): ...

    TileLang's ``execution_backend`` (see ``EXECUTION_BACKENDS``) and ``verbose`` are accepted;
    ``target_host`` other than None is refused. ``compile_flags`` go to the device compiler
    (``compile``'s docstring).
    """
    check_tilelang_options("jit", execution_backend, target_host)
    if compile_flags is not None:
        from ..pass_configs import DEVICE_COMPILE_FLAGS, compile_flag_list

        flags = compile_flag_list(compile_flags)
        if flags is None:
            raise ConfigError(f"@jit(compile_flags={compile_flags!r}): the flags must be strings")
        pass_configs = {**(pass_configs or {}), DEVICE_COMPILE_FLAGS: tuple(flags)}
    del verbose  # TileLang's compile log switch; TILELANG_DUMP_IR shows every stage here
    if mode not in MODES:
        raise ConfigError(f"@jit(mode={mode!r}) is not one of {', '.join(MODES)}")

    def wrap(fn: Callable):
        chosen = detect_mode(fn) if mode == "auto" else mode
        if chosen == "lazy":
            return LazyJIT(fn, out_idx, target, pass_configs, _backend)
        return EagerJIT(fn, out_idx, target, pass_configs, _backend, _program_factory)

    if func is not None:
        if not callable(func):
            raise ConfigError(f"@jit expects a function, got {type(func).__name__}; write "
                              f"@jit(out_idx=...) with keyword arguments")
        return wrap(func)
    return wrap
