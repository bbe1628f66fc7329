"""JITKernel numerics through the test backend, outputs, and the kernel's introspection API."""

import numpy as np
import pytest
import torch
import tvm_ffi

import jit_kernels as kernels
from tilelang_core.errors import LaunchError
from tilelang_core.jit import JITKernel, KernelParam, compile
from tilelang_core.jit.args import aligned_empty

rng = np.random.default_rng(0)


def test_vadd_torch_allocates_output_on_same_device_and_matches(backend):
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    a, b = torch.rand(1000, dtype=torch.float64), torch.rand(1000, dtype=torch.float64)
    c = kernel(a, b)
    assert isinstance(c, torch.Tensor) and c.device == a.device and c.dtype == torch.float64
    torch.testing.assert_close(c, a + b, rtol=0, atol=0)


def test_vadd_numpy_in_numpy_out(backend):
    kernel = compile(kernels.vadd, out_idx=-1, _backend=backend)
    a, b = rng.random(777), rng.random(777)
    c = kernel(a, b)
    assert type(c) is np.ndarray and c.dtype == np.float64
    np.testing.assert_array_equal(c, a + b)


def test_numpy_inputs_at_any_alignment_give_right_results(backend):
    # numpy only guarantees 16-byte alignment; TVM code assumes 64 and uses aligned vector loads
    kernel = compile(kernels.vadd, out_idx=None, _backend=backend)
    base = rng.random(1100)
    for offset in range(8):
        a, b = base[offset:offset + 1024], base[offset + 1:offset + 1025]
        c = np.zeros(1024)[0:]  # possibly misaligned output, written back after the launch
        kernel(a, b, c)
        np.testing.assert_array_equal(c, a + b)


def test_static_matmul_float64_against_numpy(backend):
    kernel = compile(kernels.matmul_static, out_idx=[2], _backend=backend)
    a, b = rng.random((16, 8)), rng.random((8, 4))
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-12)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    torch.testing.assert_close(kernel(ta, tb), ta @ tb, rtol=1e-12, atol=1e-12)


def test_symbolic_dims_and_scalar_argument(backend):
    kernel = compile(kernels.scale_rows, out_idx=[2], _backend=backend)
    a, s = torch.rand(5, 7, dtype=torch.float64), torch.rand(5, dtype=torch.float64)
    out = kernel(a, s, 2.5)
    torch.testing.assert_close(out, a * s[:, None] * 2.5)
    assert out.shape == (5, 7)
    # an int where a float64 scalar is expected is fine; a numpy float goes the slow path
    torch.testing.assert_close(kernel(a, s, 2), a * s[:, None] * 2)
    torch.testing.assert_close(kernel(a, s, np.float64(0.5)), a * s[:, None] * 0.5)


def test_two_outputs_are_returned_as_a_list_with_derived_shape(backend):
    kernel = compile(kernels.split_sum, out_idx=[2, 3], _backend=backend)
    a, w = torch.rand(10, dtype=torch.float32), torch.rand(5, dtype=torch.float32)
    lo, hi = kernel(a, w)
    assert lo.shape == hi.shape == (5,)
    torch.testing.assert_close(lo, a[:5] + w)
    torch.testing.assert_close(hi, a[5:] + w)


def test_output_whose_extent_no_input_fixes_is_refused_at_compile(backend):

    with pytest.raises(LaunchError, match="cannot allocate output 'LO'.*n is set by no input"):
        compile(kernels.halves, out_idx=[1], _backend=backend)


def test_misaligned_torch_views_are_staged_and_written_back(both_launchers):
    """Checked in Python, or refused by an entry function that tests alignment itself and then
    retried through the slow path: either way the views are staged in aligned copies."""
    kernel = compile(kernels.int_copy, out_idx=None, _backend=both_launchers)
    base_a = torch.arange(40, dtype=torch.int32)
    base_b = torch.zeros(40, dtype=torch.int32)
    a, b = base_a[1:33], base_b[3:35]  # 4 and 12 bytes past 64-byte boundaries
    kernel(a, b)
    assert torch.equal(b, a * 2)
    assert torch.equal(base_b[:3], torch.zeros(3, dtype=torch.int32))
    source = kernel._launch.__source__
    assert ("% 64" in source) == (not both_launchers.entry_checks_alignment)


def test_misaligned_strided_views_keep_their_strides_when_staged():
    """A T.StridedTensor parameter given a view at a misaligned offset (a column slice of a wider
    tensor) was staged in a contiguous copy, which the compiled strides then refused."""
    import tilelang_core.language as T

    @T.prim_func
    def plus_one(A: T.StridedTensor((8, 6), (18, 1), "float32"), B: T.StridedTensor((8, 6), (18, 1), "float32")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(8, 6):
                B[i, j] = A[i, j] + 1.0

    kernel = compile(plus_one, out_idx=None, target="cpu")
    for s in range(3):  # offsets of 0, 24 and 48 bytes
        a, b = torch.randn(8, 3, 6), torch.zeros(8, 3, 6)
        kernel(a[:, s, :], b[:, s, :])
        torch.testing.assert_close(b[:, s, :], a[:, s, :] + 1.0)
        assert (b.sum(1) == b[:, s, :]).all()  # nothing written outside the view
        an, bn = np.random.rand(8, 3, 6).astype(np.float32), np.zeros((8, 3, 6), np.float32)
        kernel(an[:, s, :], bn[:, s, :])
        np.testing.assert_array_equal(bn[:, s, :], an[:, s, :] + np.float32(1.0))


def test_out_idx_none_returns_none_and_writes_in_place(backend):
    kernel = compile(kernels.int_copy, out_idx=None, _backend=backend)
    a = torch.arange(10, dtype=torch.int32)
    b = torch.zeros(10, dtype=torch.int32)
    assert kernel(a, b) is None
    assert torch.equal(b, a * 2)


def test_tvm_ffi_tensors_are_accepted_and_outputs_follow(backend):
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    a, b = aligned_empty((64,), np.float64, 64), aligned_empty((64,), np.float64, 64)
    a[:], b[:] = rng.random(64), rng.random(64)
    c = kernel(tvm_ffi.from_dlpack(a), tvm_ffi.from_dlpack(b))
    assert isinstance(c, tvm_ffi.Tensor)
    np.testing.assert_array_equal(np.from_dlpack(c), a + b)


def test_torch_subclass_goes_through_slow_path_correctly(backend):
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    a = torch.nn.Parameter(torch.rand(8, dtype=torch.float64), requires_grad=False)
    b = torch.rand(8, dtype=torch.float64)
    torch.testing.assert_close(kernel(a, b), a.detach() + b)


def test_params_describe_names_shapes_dtypes_and_outputs(backend):
    kernel = compile(kernels.scale_rows, out_idx=[-2], _backend=backend)
    assert kernel.params == (
        KernelParam("A", "tensor", "float64", ("m", "n")),
        KernelParam("S", "tensor", "float64", ("m",)),
        KernelParam("C", "tensor", "float64", ("m", "n"), is_output=True),
        KernelParam("alpha", "scalar", "float64", ()),
    )
    assert kernel.out_idx == [2]


def test_asm_keeps_every_stage_and_source_is_the_codegen_text(backend):
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    assert list(kernel.asm) == ["tirx", "lowered", "source"]
    assert "def vadd" in kernel.asm["tirx"]
    assert "I.ir_module" in kernel.asm["lowered"]
    assert kernel.get_kernel_source() == kernel.asm["source"]
    assert "define" in kernel.get_kernel_source()  # LLVM IR


def test_export_library_loads_with_tvm_ffi_alone(backend, tmp_path):
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    path = kernel.export_library(tmp_path / "out" / "vadd.so")
    fn = tvm_ffi.load_module(str(path))["vadd"]
    a, b, c = (torch.rand(16, dtype=torch.float64) for _ in range(3))
    fn(a, b, c)
    torch.testing.assert_close(c, a + b)


def test_repr_names_kernel_and_outputs(backend):
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    assert isinstance(kernel, JITKernel)
    assert "vadd(" in repr(kernel) and "-> out" in repr(kernel)


def test_dump_ir_writes_every_stage(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_DUMP_IR", str(tmp_path / "dump"))
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    (folder,) = (tmp_path / "dump").iterdir()
    assert folder.name.startswith("vadd-")
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["0-tirx.txt", "1-lowered.txt", "2-source.txt", "pass-timing.txt", "passes"]
    assert (folder / "2-source.txt").read_text() == kernel.asm["source"]
    passes = sorted(p.name for p in (folder / "passes").iterdir())
    assert passes and passes[0].startswith("000_")  # tvm.tirx.build's passes, instrumented


@pytest.mark.parametrize("out_idx", [[3], [-4], [0, 0]])
def test_bad_out_idx_is_a_config_error_naming_the_kernel(backend, out_idx):
    from tilelang_core.errors import ConfigError

    with pytest.raises(ConfigError, match="vadd"):
        compile(kernels.vadd, out_idx=out_idx, _backend=backend)


def test_ordinary_calls_stay_on_the_generated_fast_path(both_launchers):
    kernel = compile(kernels.scale_rows, out_idx=[2], _backend=both_launchers)

    def no_slow_path(args):
        raise AssertionError("slow path taken")

    kernel._launch.__globals__["_slow"] = no_slow_path
    a, s = torch.rand(3, 4, dtype=torch.float64), torch.rand(3, dtype=torch.float64)
    torch.testing.assert_close(kernel(a, s, 1.5), a * s[:, None] * 1.5)
    from tilelang_core.jit.args import aligned_empty as aligned

    an, sn = aligned((3, 4), np.float64, 64), aligned((3,), np.float64, 64)
    an[:], sn[:] = 1.0, 2.0
    np.testing.assert_array_equal(kernel(an, sn, 0.5), np.ones((3, 4)))
    if both_launchers.entry_checks_arguments:  # the wrapper refuses; explained without launching
        with pytest.raises(LaunchError, match="parameter 'S'.*float32"):
            kernel(a, s.float(), 1.5)
    else:
        with pytest.raises(AssertionError, match="slow path"):
            kernel(a, s.float(), 1.5)


def test_one_tensor_and_no_outputs_on_every_launcher(both_launchers):
    kernel = compile(kernels.fill_one, out_idx=None, _backend=both_launchers)
    a = torch.zeros(32)
    assert kernel(a) is None
    assert torch.equal(a, torch.ones(32))
