"""Every argument problem is a LaunchError raised before launch, naming kernel and parameter.

Each test runs with both launcher flavours (conftest ``both_launchers``): checks left to TVM's
entry wrapper and explained afterwards, and every check in Python. The messages must not differ.
"""

import numpy as np
import pytest
import torch
import tvm_ffi

import jit_kernels as kernels
from tilelang_core.errors import LaunchError
from tilelang_core.jit import compile


@pytest.fixture
def backend(both_launchers):
    return both_launchers


@pytest.fixture
def vadd(backend):
    return compile(kernels.vadd, out_idx=[-1], _backend=backend)


@pytest.fixture
def matmul(backend):
    return compile(kernels.matmul_static, out_idx=[-1], _backend=backend)


def f64(*shape):
    return torch.rand(*shape, dtype=torch.float64)


def test_wrong_dtype_names_parameter_and_conversion(vadd):
    with pytest.raises(LaunchError) as info:
        vadd(f64(8), torch.rand(8, dtype=torch.float32))
    text = str(info.value)
    assert "kernel 'vadd'" in text and "parameter 'B'" in text
    assert "float32" in text and "float64" in text and ".to(torch.float64)" in text


def test_wrong_dtype_numpy_suggests_astype(vadd):
    with pytest.raises(LaunchError, match=r"parameter 'A'.*astype\('float64'\)"):
        vadd(np.zeros(8, dtype=np.float32), np.zeros(8))


def test_wrong_static_shape_names_parameter_and_dimension(matmul):
    with pytest.raises(LaunchError, match=r"parameter 'B'.*\(8, 5\).*expected \(8, 4\).*dimension 1 must be 4"):
        matmul(f64(16, 8), f64(8, 5))


def test_wrong_rank_names_parameter(matmul):
    with pytest.raises(LaunchError, match=r"parameter 'A'.*1 dimensions"):
        matmul(f64(128), f64(8, 4))


def test_symbolic_dim_bound_inconsistently_names_both_parameters(vadd):
    with pytest.raises(LaunchError) as info:
        vadd(f64(8), f64(9))
    text = str(info.value)
    assert "parameter 'B'" in text and "n=9" in text and "'A'" in text and "n=8" in text


def test_derived_extent_is_checked(backend):
    kernel = compile(kernels.split_sum, out_idx=[2, 3], _backend=backend)
    with pytest.raises(LaunchError, match=r"parameter 'A'.*n \* 2 = 10"):
        kernel(torch.rand(11), torch.rand(5))


def test_non_contiguous_view_names_parameter(vadd):
    with pytest.raises(LaunchError, match=r"parameter 'A'.*not contiguous.*\.contiguous\(\)"):
        vadd(f64(16)[::2], f64(8))


def test_transposed_matrix_is_not_contiguous(matmul):
    with pytest.raises(LaunchError, match=r"parameter 'A'.*not contiguous"):
        matmul(f64(8, 16).t(), f64(8, 4))


def test_strided_numpy_view_names_parameter(vadd):
    with pytest.raises(LaunchError, match=r"parameter 'B'.*not contiguous"):
        vadd(np.zeros(8), np.zeros(16)[::2])


def test_wrong_device_names_parameter_and_target_device(vadd):
    with pytest.raises(LaunchError, match=r"parameter 'A'.*on meta.*runs on cpu.*\.to\('cpu'\)"):
        vadd(torch.empty(8, dtype=torch.float64, device="meta"), f64(8))


@pytest.mark.parametrize("count", [0, 1, 3])
def test_wrong_number_of_arguments_lists_inputs_and_allocated_outputs(vadd, count):
    args = [f64(4) for _ in range(count)]
    with pytest.raises(LaunchError) as info:
        vadd(*args)
    text = str(info.value)
    assert f"got {count}" in text and "(A, B)" in text and "C (out_idx)" in text


def test_non_tensor_argument_names_parameter(vadd):
    with pytest.raises(LaunchError, match=r"parameter 'B'.*expects a tensor, got list"):
        vadd(f64(4), [1.0, 2.0, 3.0, 4.0])


def test_wrong_scalar_type_names_parameter(backend):
    kernel = compile(kernels.scale_rows, out_idx=[2], _backend=backend)
    with pytest.raises(LaunchError, match=r"parameter 'alpha' \(argument 2\).*float64 scalar.*str"):
        kernel(f64(2, 3), f64(2), "2.0")


def test_errors_happen_before_launch_so_inputs_are_untouched(backend):
    kernel = compile(kernels.int_copy, out_idx=None, _backend=backend)
    a, b = torch.arange(8, dtype=torch.int32), torch.zeros(9, dtype=torch.int32)
    with pytest.raises(LaunchError):
        kernel(a, b)
    assert torch.equal(b, torch.zeros(9, dtype=torch.int32))


def test_entry_function_failure_is_wrapped_with_kernel_name(vadd):
    # bypass the checks: call the slow path's launcher with a bad argument list directly
    binder = vadd._binder
    with pytest.raises(LaunchError, match="kernel 'vadd' failed at launch"):
        binder.call([f64(4), f64(4)])


def test_host_tensors_for_a_device_kernel_are_refused_naming_the_device():
    from jit_test_backend import PythonChecksBackend

    class PretendCuda(PythonChecksBackend):
        # only the Python checks care; nothing is launched. (Its llvm wrapper expects host memory,
        # so it must not claim to check arguments for a cuda kernel.)
        device_type = "cuda"

    kernel = compile(kernels.vadd, out_idx=[-1], _backend=PretendCuda())
    with pytest.raises(LaunchError, match=r"parameter 'A'.*is on cpu, but the kernel runs on cuda.*\.to\('cuda'\)"):
        kernel(f64(4), f64(4))
    with pytest.raises(LaunchError, match=r"parameter 'A'.*numpy array \(host memory\).*torch tensor on cuda"):
        kernel(np.zeros(4), np.zeros(4))


def test_wrong_dtype_of_the_first_tensor_is_named_although_the_output_follows_it(vadd):
    # the entry-checks launcher allocates C like A (new_empty inherits A's dtype) before the
    # wrapper refuses A: the refusal must still name A, not C
    with pytest.raises(LaunchError, match=r"parameter 'A' \(argument 0\) has dtype float32, expected float64"):
        vadd(torch.rand(8, dtype=torch.float32), f64(8))


def test_bool_for_a_float_scalar_is_refused(backend):
    # TVM's wrapper takes True for a float64 scalar; the launcher must not rely on it for this
    kernel = compile(kernels.scale_rows, out_idx=[2], _backend=backend)
    with pytest.raises(LaunchError, match=r"parameter 'alpha' \(argument 2\).*float64 scalar.*bool"):
        kernel(f64(2, 3), f64(2), True)


def test_tvm_ffi_object_for_a_tensor_is_refused_before_the_wrapper_reads_it(vadd):
    # the wrapper accepts any tvm-ffi object where a tensor goes and reads it as a DLTensor
    with pytest.raises(LaunchError, match=r"parameter 'B'.*expects a tensor, got Array"):
        vadd(f64(4), tvm_ffi.convert([1.0, 2.0]))


def test_wrapper_refusal_is_explained_without_taking_the_slow_path():
    from jit_test_backend import LlvmTestBackend

    kernel = compile(kernels.vadd, out_idx=None, _backend=LlvmTestBackend())

    def no_slow_path(args):
        raise AssertionError("slow path taken")

    kernel._launch.__globals__["_slow"] = no_slow_path
    with pytest.raises(LaunchError, match=r"parameter 'B' \(argument 1\) has dtype float32") as info:
        kernel(f64(4), torch.rand(4), f64(4))
    assert info.value.__cause__ is None  # TVM's own refusal ("B.dtype ...") would only mislead
    with pytest.raises(LaunchError, match=r"parameter 'C'.*not contiguous") as info:
        kernel(f64(4), f64(4), f64(8)[::2])
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_a_refusal_stands_alone_without_the_wrappers_error_or_our_checking_frames(matmul):
    """Issue 24: a wrong shape printed tvm-ffi's "Mismatched B.strides ... compact array" first,
    then ours; now ours alone, its traceback ending at the call."""
    import traceback

    with pytest.raises(LaunchError) as info:
        matmul(f64(16, 8), f64(8, 5))
    err = info.value
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)
    printed = "".join(traceback.format_exception(err))
    assert "Mismatched" not in printed and "compact array" not in printed
    assert "_check_tensor" not in printed and "parameter 'B'" in printed
