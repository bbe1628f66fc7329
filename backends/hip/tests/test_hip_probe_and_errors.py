"""The KFD probe on fake sysfs trees, options, and the errors a user meets compiling for hip."""

import pytest

import tilelang_core.language as T
from tilelang_core.errors import ConfigError, LoweringError
from tilelang_core.plugin import HostView
from tilelang_hip.options import HipOptions
from tilelang_hip.pipeline import HipBackend
from tilelang_hip.target import gfx_name, probe

NODES = "sys/class/kfd/kfd/topology/nodes"


def kfd_host(tmp_path, versions, environ=None, kfd=True):
    """Node 0 is the CPU (simd_count 0); then one GPU node per gfx_target_version."""
    if kfd:
        (tmp_path / "dev").mkdir(parents=True, exist_ok=True)
        (tmp_path / "dev" / "kfd").write_text("")
    for i, version in enumerate([None] + list(versions)):
        node = tmp_path / NODES / str(i)
        node.mkdir(parents=True, exist_ok=True)
        simds = 0 if version is None else 304
        node.joinpath("properties").write_text(f"cpu_cores_count 8\nsimd_count {simds}\n"
                                               f"gfx_target_version {version or 0}\n")
    return HostView.fake(tmp_path, environ or {})


def test_gpu_nodes_are_found_by_their_simds_and_named_by_gfx_version(tmp_path):
    (device,) = probe(kfd_host(tmp_path, [90402, 90402]))
    assert device.count == 2 and device.arch == "gfx942" and device.names == ("AMD gfx942",) * 2
    assert any("simd_count 304" in e for e in device.evidence)


def test_gfx_names():
    assert [gfx_name(v) for v in (90402, 90010, 110000)] == ["gfx942", "gfx90a", "gfx1100"]


@pytest.mark.parametrize("variable", ["HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"])
def test_visible_devices_narrow_the_nodes(tmp_path, variable):
    (device,) = probe(kfd_host(tmp_path, [90010, 110000], {variable: "1"}))
    assert device.count == 1 and device.arch == "gfx1100"
    assert probe(kfd_host(tmp_path / "hidden", [90010], {"HIP_VISIBLE_DEVICES": "-1"})) == []


def test_rocr_filters_before_hip_indexes(tmp_path):
    host = kfd_host(tmp_path, [90010, 90402, 110000], {"ROCR_VISIBLE_DEVICES": "1,2", "HIP_VISIBLE_DEVICES": "1"})
    (device,) = probe(host)
    assert device.count == 1 and device.arch == "gfx1100"


def test_no_kfd_device_node_means_no_amd_gpu(tmp_path):
    assert probe(kfd_host(tmp_path, [90402], kfd=False)) == []
    assert probe(kfd_host(tmp_path / "cpu_only", [])) == []


class Target:
    def __init__(self, arch):
        self.arch = arch


def make_gemm(M, N, K, bm=64, bn=64, bk=32, stages=2, dtype=T.float16):
    @T.prim_func
    def big_tiles(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return big_tiles


def test_lds_over_the_limit_names_the_kernel_and_the_way_out():
    with pytest.raises(LoweringError, match=r"kernel 'big_tiles' needs \d+ bytes of LDS.*65536 bytes "
                                            r"gfx942 allows.*num_stages"):
        HipBackend(Target("gfx942")).lower(make_gemm(512, 512, 512, bm=256, bn=256, bk=64, stages=3))


def test_a_dtype_no_hip_arch_has_is_refused_before_clang():
    with pytest.raises(LoweringError, match="kernel 'big_tiles' uses float8_e4m3fn, which gfx1100 does not support"):
        HipBackend(Target("gfx1100")).lower(make_gemm(64, 64, 64, dtype=T.float8_e4m3fn))


def test_k_that_the_instruction_cannot_step_is_explained():
    with pytest.raises(LoweringError, match="K=24 must be a multiple of 16 for mfma_16x16x16"):
        HipBackend(Target("gfx942")).lower(make_gemm(64, 64, 24, bk=24))


def test_unknown_arch_and_bad_options_are_refused():
    with pytest.raises(Exception, match="hip arch 'gfx803' is not supported"):
        HipBackend(Target("gfx803")).lower(make_gemm(64, 64, 64))
    with pytest.raises(ConfigError, match="mfma='8x8x8' must be one of"):
        HipOptions.from_pass_configs({"mfma": "8x8x8"})
    assert HipOptions().stable_hash() != HipOptions(mfma="32x32x8").stable_hash()


def test_compiling_for_hip_without_rocm_gives_the_kernel_and_its_first_call_says_why():
    """Cross-compiling (issue 24): the code object is built with clang here; only running needs
    the HIP runtime, and only the call says so."""
    import shutil

    import tilelang_core as tl
    from tilelang_core.errors import NoDeviceError
    from tilelang_hip.runtime import find_libamdhip64

    if find_libamdhip64() is not None or shutil.which("clang-19") is None:
        pytest.skip("needs clang-19 and no ROCm runtime on this machine")
    kernel = tl.compile(make_gemm(128, 64, 64), target="hip:gfx942")
    assert "__global__" in kernel.get_kernel_source() and kernel.artifact_path.is_file()
    with pytest.raises(NoDeviceError, match=r"kernel 'big_tiles' compiled for hip.*cannot load the HIP runtime"):
        kernel(None, None, None)
