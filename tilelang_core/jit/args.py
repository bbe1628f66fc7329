"""Argument checking and output allocation: the slow, thorough path of a kernel call.

The launcher (``launcher.py``) handles the common case with exact-type checks it generates per
kernel; whenever one of them fails it hands the call to ``ArgBinder.launch``, which either finds
what is wrong and raises a ``LaunchError`` naming the kernel, the parameter and the fix, or finds
nothing wrong (a tensor subclass, a numpy integer scalar, a tvm-ffi tensor, mixed frameworks) and
launches. So an error message never has to be written twice.

numpy allocates arrays 16-byte aligned (and ``torch.from_numpy`` or a view at an offset inherits
that) while TVM-generated code assumes the buffer's ``data_alignment`` (64) and uses aligned vector
loads: a misaligned pointer segfaults. So misaligned numpy/torch arguments are staged through an
aligned copy, and copied back after the launch in case the kernel wrote them. Correct, but a copy:
allocate with torch, or ``aligned_empty`` here, to stay on the fast path.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from ..errors import LaunchError
from .params import KernelParam

try:  # torch is optional; tvm_ffi imports it anyway when it is installed
    import torch
except ImportError:  # pragma: no cover - the test venv has torch
    torch = None


def torch_dtype(name: str):
    """tvm dtype string -> torch.dtype, or None when torch has no such type."""
    if torch is None:
        return None
    value = getattr(torch, name, None)
    return value if isinstance(value, torch.dtype) else None


def numpy_dtype(name: str):
    """tvm dtype string -> numpy dtype, or None (bfloat16, float8, sub-byte ints)."""
    try:
        dtype = np.dtype(name)
    except TypeError:
        return None
    return dtype if dtype.name == name else None


_TORCH_CPU_ALIGNMENT = 64  # c10::gAlignment on x86-64 and aarch64
_TORCH_FROM_NUMPY = {} if torch is None else {
    np.dtype(name): getattr(torch, name) for name in
    ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
     "complex64", "complex128")}


def aligned_empty(shape: Sequence[int], dtype, alignment: int) -> np.ndarray:
    """An uninitialized C-contiguous numpy array whose data pointer is ``alignment``-aligned."""
    dtype = np.dtype(dtype)
    if torch is not None and alignment <= _TORCH_CPU_ALIGNMENT:
        tdtype = _TORCH_FROM_NUMPY.get(dtype)
        if tdtype is not None:  # torch's CPU allocator aligns to 64 bytes and is 3x faster here
            return torch.empty(shape, dtype=tdtype).numpy()
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    raw = np.empty(count * dtype.itemsize + alignment, dtype=np.uint8)
    offset = -raw.ctypes.data % alignment
    return raw[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)


def _aligned_strided(value: np.ndarray, alignment: int) -> np.ndarray:
    """An uninitialized array with ``value``'s shape and strides whose data pointer is
    ``alignment``-aligned (a strided view whose offset left it misaligned, staged for the launch)."""
    item = value.dtype.itemsize
    span = 0 if value.size == 0 else 1 + sum((n - 1) * (s // item) for n, s in zip(value.shape, value.strides))
    flat = aligned_empty((max(span, 1),), value.dtype, alignment)
    return np.lib.stride_tricks.as_strided(flat, value.shape, value.strides)


def _evaluate(py: str, env: dict):
    """The value of an extent or condition compiled to Python text (our own, over size names)."""
    return eval(py, {"min": min, "max": max}, env)  # noqa: S307 - our own text


def _dim_value(d, env: dict) -> int:
    """Extent ``d`` of a parameter with the sizes in ``env``: a constant, a size variable, or an
    expression of them."""
    return d.value if d.value is not None else env[d.var] if d.var else _evaluate(d.py, env)


class _Info:
    """Framework-neutral view of one tensor argument, for the checks."""

    __slots__ = ("framework", "dtype", "shape", "strides", "device", "device_index", "ptr")

    def __init__(self, value):
        if torch is not None and isinstance(value, torch.Tensor):
            self.framework = "torch"
            self.dtype = str(value.dtype).replace("torch.", "")
            self.shape, self.strides = tuple(value.shape), tuple(value.stride())
            self.device, self.device_index = value.device.type, value.device.index
            self.ptr = value.data_ptr()
        elif isinstance(value, np.ndarray):
            self.framework = "numpy"
            self.dtype, self.shape = value.dtype.name, value.shape
            item = value.dtype.itemsize
            self.strides = tuple(s // item if s % item == 0 else s / item for s in value.strides)
            self.device, self.device_index, self.ptr = "cpu", None, value.ctypes.data
        else:  # a tvm_ffi.Tensor (from_dlpack was applied by the caller for other DLPack objects)
            self.framework = "tvm_ffi"
            self.dtype, self.shape = str(value.dtype), tuple(value.shape)
            self.strides = tuple(value.strides)
            self.device, self.device_index = value.device.type, value.device.index
            self.ptr = value.data_ptr()
        if self.device == "cpu":  # torch says None, tvm-ffi says 0: one host either way
            self.device_index = None


class _DeviceMemory:
    """Device memory at a raw address, for ``torch.as_tensor`` (``__cuda_array_interface__``)."""

    def __init__(self, address: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (address, False),
                                         "version": 3, "strides": None}


def tensor_at(address: int, shape: tuple, dtype: str, strides: tuple | None, device: str,
              index: int | None = None):
    """A tensor of ``shape`` / ``dtype`` (``strides`` in elements; None: compact) over the memory at
    data pointer ``address`` on ``device`` (``"cpu"``, or a torch GPU device type), sharing it."""
    if torch is None:
        if device != "cpu" or numpy_dtype(dtype) is None:
            raise LaunchError(f"viewing {dtype} memory on {device} needs torch")
    elif torch_dtype(dtype) is None:
        raise LaunchError(f"torch has no dtype {dtype}")
    strides = strides if strides is not None else _compact_strides(shape)
    count = 0 if any(n == 0 for n in shape) else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    itemsize = numpy_dtype(dtype).itemsize if torch is None else torch_dtype(dtype).itemsize
    nbytes = count * itemsize
    if torch is None:
        import ctypes

        raw = np.frombuffer((ctypes.c_ubyte * max(nbytes, 1)).from_address(address), np.uint8)[:nbytes]
        flat = raw.view(numpy_dtype(dtype))
        return np.lib.stride_tricks.as_strided(flat, shape, [s * itemsize for s in strides])
    if device == "cpu":
        import ctypes

        if nbytes == 0:
            return torch.empty(shape, dtype=torch_dtype(dtype))
        raw = torch.frombuffer((ctypes.c_ubyte * nbytes).from_address(address), dtype=torch.uint8)
    elif device == "mps":
        raise LaunchError("data pointers cannot be viewed on mps")
    else:
        where = device if index is None else f"{device}:{index}"
        if nbytes == 0:
            return torch.empty(shape, dtype=torch_dtype(dtype), device=where)
        raw = torch.as_tensor(_DeviceMemory(address, nbytes), device=where)
    return raw.view(torch_dtype(dtype)).as_strided(shape, strides)


def _packed_torch_dtypes() -> tuple:
    """torch dtypes of byte tensors a packed 4-bit parameter takes (besides int8)."""
    return tuple(d for d in (torch.uint8, getattr(torch, "float4_e2m1fn_x2", None)) if d is not None)


def _pointer(value) -> int:
    return value.ctypes.data if isinstance(value, np.ndarray) else value.data_ptr()


def _compact_strides(shape) -> tuple:
    strides, acc = [], 1
    for extent in reversed(shape):
        strides.append(acc)
        acc *= extent
    return tuple(reversed(strides))


def _strides_ok(expected, got, shape) -> bool:
    # dims of extent 1 have arbitrary strides in every framework: ignore them
    return all(e == g or n == 1 for e, g, n in zip(expected, got, shape))


class ArgBinder:
    """Full checks and the generic launch for one compiled kernel."""

    def __init__(self, kernel: str, params: Sequence[KernelParam], function, device_type: str | None,
                 assumes: Sequence = ()):
        self.kernel = kernel
        #: T.assume conditions over the arguments, checked at every call (jit/params.HostAssume)
        self.assumes = tuple(assumes)
        self.params = tuple(params)
        self.inputs = tuple(p for p in params if not p.is_output)
        self.outputs = tuple(p for p in params if p.is_output)
        self.function = function
        self.device_type = device_type
        self._signature = ", ".join(p.name for p in self.inputs)

    # -- messages -------------------------------------------------------------------------------
    def _fail(self, p: KernelParam, position: int, what: str, fix: str) -> LaunchError:
        return LaunchError(f"kernel '{self.kernel}': parameter '{p.name}' (argument {position}) "
                           f"{what}; {fix}")

    def _count_error(self, count: int) -> LaunchError:
        expected = len(self.inputs)
        text = (f"kernel '{self.kernel}' takes {expected} argument{'s' if expected != 1 else ''} "
                f"({self._signature}), got {count}")
        if self.outputs:
            outs = ", ".join(p.name for p in self.outputs)
            text += f"; {outs} (out_idx) is allocated and returned by the call, do not pass it"
        return LaunchError(text)

    # -- checks ---------------------------------------------------------------------------------
    def _scalar(self, p: KernelParam, position: int, value):
        if p.dtype == "bool":
            if isinstance(value, (bool, np.bool_)):
                return bool(value)
        elif p.dtype.startswith(("int", "uint")):
            if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
                return int(value)
        elif isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
            return float(value)
        raise self._fail(p, position, f"is a {p.dtype} scalar, got {type(value).__name__} "
                                      f"{value!r}", f"pass a Python number")

    def _tensor_value(self, p: KernelParam, position: int, value):
        if torch is not None and isinstance(value, torch.Tensor):
            if p.packed and value.dtype in _packed_torch_dtypes():  # its bytes, as the kernel's int8
                return value.view(torch.int8)
            return value
        if isinstance(value, np.ndarray):
            if p.packed and value.dtype == np.uint8:
                return value.view(np.int8)
            return value
        import tvm_ffi

        if isinstance(value, tvm_ffi.Tensor):
            return value
        if hasattr(value, "__dlpack__"):
            return tvm_ffi.from_dlpack(value)
        raise self._fail(p, position, f"expects a tensor, got {type(value).__name__}",
                         "pass a torch.Tensor, a numpy array or any DLPack tensor")

    def _check_tensor(self, p, position, info: _Info, bound: dict, first: _Info | None):
        fix_dtype = {"torch": f"convert it with .to(torch.{p.dtype})",
                     "numpy": f"convert it with .astype('{p.dtype}')"}.get(info.framework,
                                                                           f"pass {p.dtype} data")
        if self.device_type is not None and info.device != self.device_type:
            where = "a numpy array (host memory)" if info.framework == "numpy" else f"on {info.device}"
            raise self._fail(p, position, f"is {where}, but the kernel runs on {self.device_type}",
                             f"move it with .to('{self.device_type}')" if info.framework == "torch"
                             else f"pass a torch tensor on {self.device_type}")
        if first is not None and (info.device, info.device_index) != (first.device, first.device_index):
            raise self._fail(p, position, f"is on {info.device}:{info.device_index} while the first "
                                          f"tensor is on {first.device}:{first.device_index}",
                             "put all tensors of one call on the same device")
        if info.dtype != p.dtype:
            raise self._fail(p, position, f"has dtype {info.dtype}, expected {p.dtype}", fix_dtype)
        if len(info.shape) != len(p.dims):
            raise self._fail(p, position, f"has {len(info.shape)} dimensions {info.shape}, expected "
                                          f"{len(p.dims)} {p.shape}", "reshape it")
        for axis, (dim, got) in enumerate(zip(p.dims, info.shape)):
            if dim.value is not None and got != dim.value:
                raise self._fail(p, position, f"has shape {info.shape}, expected {p.shape} "
                                              f"(dimension {axis} must be {dim.value})",
                                 "pass a tensor of the compiled shape or recompile for this one")
            if dim.var is not None:
                seen = bound.setdefault(dim.var, (got, p.name, axis))
                if seen[0] != got:
                    raise self._fail(p, position, f"has shape {info.shape}: dimension {axis} is "
                                                  f"{dim.var}={got}, but '{seen[1]}' dimension "
                                                  f"{seen[2]} set {dim.var}={seen[0]}",
                                     f"make the extents named {dim.var} agree")
        expected = p.strides if p.strides is not None else _compact_strides(info.shape)
        if all(isinstance(s, int) for s in expected) and not _strides_ok(expected, info.strides,
                                                                          info.shape):
            what = "is not contiguous" if p.strides is None else "has other strides than compiled"
            raise self._fail(p, position, f"{what} (strides {info.strides}, expected {expected})",
                             "pass .contiguous() (torch) or np.ascontiguousarray(...) (numpy)")

    def _check_derived(self, checks, env: dict):
        # compound extents (n * 2) once every bare variable has been bound
        for p, position, info in checks:
            for axis, dim in enumerate(p.dims):
                if dim.py is None or not all(v in env for v in dim.vars):
                    continue  # not checkable here; the compiled entry function still checks it
                want = _evaluate(dim.py, env)
                if info.shape[axis] != want:
                    raise self._fail(p, position, f"has shape {info.shape}, expected dimension "
                                                  f"{axis} = {dim.text} = {want}",
                                     "pass a tensor of the compiled shape")
        return env

    # -- the generic launch ---------------------------------------------------------------------
    def check(self, args: tuple):
        """Check every input; return (values, checks, env, first) or raise the first problem."""
        if len(args) != len(self.inputs):
            raise self._count_error(len(args))
        values, infos, bound, checks = [], [], {}, []
        first = None
        addresses = []  # T.ptr parameters given a data pointer: viewed once every size is bound
        for position, (p, value) in enumerate(zip(self.inputs, args)):
            if not p.is_tensor:
                value = self._scalar(p, position, value)
                seen = bound.setdefault(p.name, (value, p.name, 0))
                if seen[0] != value:  # a size also given by a tensor's shape (T.ptr kernels)
                    raise self._fail(p, position, f"is {value}, but '{seen[1]}' dimension {seen[2]} "
                                                  f"set {p.name}={seen[0]}", "pass sizes that agree")
                values.append(value)
                continue
            if p.pointer and isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
                addresses.append((position, p, int(value)))
                values.append(None)
                continue
            value = self._tensor_value(p, position, value)
            info = _Info(value)
            self._check_tensor(p, position, info, bound, first)
            first = first or info
            checks.append((p, position, info))
            values.append(value)
            infos.append(info)
        # the sizes every tensor and scalar bound (a view's shape binds nothing new: it is read
        # from them)
        env = {name: value[0] for name, value in bound.items()}
        for position, p, address in addresses:
            value = self._view_at(p, position, address, env, first)
            info = _Info(value)
            self._check_tensor(p, position, info, bound, first)
            first = first or info
            checks.append((p, position, info))
            values[position] = value
        self._check_assumes(env)
        return values, checks, self._check_derived(checks, env), first

    def _check_assumes(self, env: dict) -> None:
        for a in self.assumes:
            if all(v in env for v in a.vars) and not _evaluate(a.py, env):
                values = ", ".join(f"{v}={env[v]}" for v in a.vars)
                if a.reason:
                    raise LaunchError(f"kernel '{self.kernel}': {a.reason} ({values})")
                raise LaunchError(f"kernel '{self.kernel}': Assume: {a.text} is false for these arguments ({values}); "
                                  f"the kernel was written for arguments where it holds (T.assume)")

    def _view_at(self, p: KernelParam, position: int, address: int, env: dict, first: _Info | None):
        """A tensor over the memory at ``address`` with ``p``'s declared shape and dtype, on the
        kernel's device (TileLang's cython convention for T.ptr parameters: ``a.data_ptr()``).
        Nothing about the memory can be checked; the caller vouches for it. ``env``: the sizes
        bound by the other arguments."""
        if address <= 0:
            raise self._fail(p, position, f"got the address {address}", "pass a tensor or its data_ptr()")
        shape = []
        for axis, d in enumerate(p.dims):
            missing = [v for v in d.vars if v not in env]
            if d.value is None and (missing or d.py is None and d.var is None):
                why = f"{', '.join(missing)} is set by no other argument" if missing else \
                    f"extent {d.text} cannot be evaluated"
                raise self._fail(p, position, f"got a data pointer, but dimension {axis} ({d.text}) of "
                                              f"its shape {p.shape} is unknown: {why}",
                                 "pass the tensor itself")
            shape.append(_dim_value(d, env))
        if p.strides is not None and not all(isinstance(s, int) for s in p.strides):
            raise self._fail(p, position, f"got a data pointer, but its strides {p.strides} are "
                                          f"symbolic", "pass the tensor itself")
        device = self.device_type or "cpu"
        index = first.device_index if first is not None else None
        try:
            return tensor_at(address, tuple(shape), p.dtype, p.strides, device, index)
        except LaunchError as err:
            raise self._fail(p, position, f"got a data pointer: {err}", "pass the tensor itself") from None

    def launch(self, args: tuple):
        """Check everything, allocate outputs, launch; raise LaunchError on the first problem."""
        values, checks, env, first = self.check(args)
        values, write_back = self._align(values, checks)
        call_args, outputs = self._with_outputs(values, env, first)
        self.call(call_args)
        for original, staged in write_back:  # the kernel may have written its inputs
            if isinstance(original, np.ndarray):
                np.copyto(original, staged)
            else:
                original.copy_(staged)
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs

    def _align(self, values: list, checks):
        write_back = []
        for p, position, info in checks:
            if info.ptr % p.alignment == 0:
                continue
            value = values[position]
            # a parameter compiled for strides (T.StridedTensor) gets a copy with the same strides
            keep_strides = p.strides is not None
            if info.framework == "numpy":
                staged = aligned_empty(value.shape, value.dtype, p.alignment) if not keep_strides else \
                    _aligned_strided(value, p.alignment)
                np.copyto(staged, value)
                writable = value.flags.writeable
            elif info.framework == "torch":
                # fresh torch allocations are 64-byte (CPU) or 256-byte (CUDA) aligned
                staged = value.clone(memory_format=torch.contiguous_format) if not keep_strides else \
                    torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device)
                if keep_strides:
                    staged.copy_(value)
                writable = True
            else:
                raise self._fail(p, position, f"data pointer is not {p.alignment}-byte aligned",
                                 "pass a freshly allocated tensor")
            if _pointer(staged) % p.alignment:
                raise self._fail(p, position, f"data pointer is not {p.alignment}-byte aligned and "
                                              f"an aligned copy could not be made",
                                 "pass a freshly allocated tensor")
            values[position] = staged
            if writable:
                write_back.append((value, staged))
        return values, write_back

    def _with_outputs(self, values: list, env: dict, first: _Info | None):
        if not self.outputs:
            return values, []
        framework = first.framework if first else ("torch" if torch is not None else "numpy")
        outputs = []
        for p in self.outputs:
            shape = tuple(_dim_value(d, env) for d in p.dims)
            outputs.append(self.allocate(p, shape, framework, first))
        call_args, it_in, it_out = [], iter(values), iter(outputs)
        for p in self.params:
            call_args.append(next(it_out) if p.is_output else next(it_in))
        # a packed float4 output is returned as torch's float4_e2m1fn_x2 bytes where torch has them
        fp4x2 = getattr(torch, "float4_e2m1fn_x2", None) if torch is not None else None
        outputs = [out.view(fp4x2) if p.packed == "float4_e2m1fn" and fp4x2 is not None
                   and isinstance(out, torch.Tensor) else out for p, out in zip(self.outputs, outputs)]
        return call_args, outputs

    def allocate(self, p: KernelParam, shape: tuple, framework: str, first: _Info | None):
        device = first.device if first else (self.device_type or "cpu")
        if framework == "numpy" or (framework == "tvm_ffi" and device == "cpu") or torch is None:
            dtype = numpy_dtype(p.dtype)
            if dtype is None or device != "cpu":
                raise LaunchError(f"kernel '{self.kernel}' cannot allocate output '{p.name}' "
                                  f"({p.dtype} on {device}) with numpy; pass torch tensors")
            array = aligned_empty(shape, dtype, p.alignment)
            if framework == "tvm_ffi":
                import tvm_ffi

                return tvm_ffi.from_dlpack(array)
            return array
        dtype = torch_dtype(p.dtype)
        if dtype is None:
            raise LaunchError(f"kernel '{self.kernel}' cannot allocate output '{p.name}': torch has "
                              f"no dtype {p.dtype}; pass it explicitly")
        index = first.device_index if first else None
        out = torch.empty(shape, dtype=dtype, device=device if index is None else f"{device}:{index}")
        if framework == "tvm_ffi":
            import tvm_ffi

            return tvm_ffi.from_dlpack(out)
        return out

    def call(self, call_args: Sequence[Any]):
        try:
            self.function(*call_args)
        except Exception as exc:  # the entry function's own checks, or a failing launch
            raise self.launch_failed(exc) from self.cause(exc)

    def cause(self, exc: BaseException) -> BaseException | None:
        """What a LaunchError from ``launch_failed(exc, ...)`` chains to: nothing when it is our own
        refusal of the arguments (the wrapper's message, such as "Mismatched A.strides ...
        expected to be compact array" for a wrong shape, would only mislead before ours), else the
        launch failure itself."""
        return None if getattr(exc, "_tilelang_refused", False) else exc

    def relaunch(self, exc: BaseException, args: tuple):
        """After the entry function refused ``args`` (it checks alignment itself): through the slow
        path when a tensor is less aligned than the kernel assumes (``launch`` stages it in an
        aligned copy and writes it back), else the refusal explained (``launch_failed``)."""
        try:
            _, checks, _, _ = self.check(args)
        except LaunchError as err:
            raise err.with_traceback(None) from None  # ours names the parameter; the wrapper's would mislead
        if any(info.ptr % p.alignment for p, _, info in checks):
            return self.launch(args)
        raise self.launch_failed(exc) from exc

    def launch_failed(self, exc: BaseException, args: tuple | None = None) -> LaunchError:
        """The error to raise for a failed entry-function call.

        With ``args`` (the launcher left the checks to the entry function), our own checks run
        first, without launching: the wrapper refused before running anything, and their message
        names the parameter and the fix where the wrapper's names only the buffer.
        """
        if args is not None:
            try:
                self.check(args)
            except LaunchError as err:
                exc._tilelang_refused = True  # (see cause)
                return err.with_traceback(None)  # the user's call, not our checking frames
            except Exception:  # noqa: BLE001 - a broken argument: report the launch failure
                pass
        return LaunchError(f"kernel '{self.kernel}' failed at launch: {type(exc).__name__}: {exc}")
