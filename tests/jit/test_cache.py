"""The disk cache: hits skip build, key changes miss, corruption is detected and rebuilt."""

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import jit_kernels as kernels
from jit_test_backend import FailingBackend, LlvmTestBackend, FakeTarget
from tilelang_core.errors import CacheError, CompileError
from tilelang_core.jit import CacheCorruptionWarning, DiskCache, clear_memory_cache, compile

rng = np.random.default_rng(1)


def run_vadd(kernel):
    a, b = rng.random(64), rng.random(64)
    np.testing.assert_array_equal(kernel(a, b), a + b)


def entries(cache_root: Path):
    return sorted((cache_root / "v1" / "kernels").glob("*/*"))


def test_second_compile_in_a_fresh_process_state_hits_disk_without_building(isolated_cache):
    first = LlvmTestBackend()
    k1 = compile(kernels.vadd, out_idx=[-1], _backend=first)
    assert first.builds == 1 and not k1.from_cache
    clear_memory_cache()
    second = LlvmTestBackend()
    k2 = compile(kernels.vadd, out_idx=[-1], _backend=second)
    assert second.builds == 0 and second.loads == 1 and k2.from_cache
    assert k2.key == k1.key and k2.asm == k1.asm
    run_vadd(k2)
    assert len(entries(isolated_cache)) == 1


def test_same_process_recompile_reuses_loaded_module(backend):
    k1 = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    k2 = compile(kernels.vadd, out_idx=None, _backend=backend)
    assert backend.builds == 1 and backend.loads == 1
    assert k1.function is k2.function and k2.out_idx == []


@pytest.mark.parametrize("change", ["source", "options", "target", "toolchain"])
def test_changed_key_part_misses(isolated_cache, change):
    base = LlvmTestBackend()
    k1 = compile(kernels.vadd, out_idx=[-1], _backend=base)
    func, pass_configs, other = kernels.vadd, None, LlvmTestBackend()
    if change == "source":
        func = kernels.vsub
    elif change == "options":
        pass_configs = {"tl.opt_level": 2}
    elif change == "target":
        other = LlvmTestBackend(target=FakeTarget(arch="other"))
    else:
        other = LlvmTestBackend(toolchain="tvm-llvm-next")
    k2 = compile(func, out_idx=[-1], pass_configs=pass_configs, _backend=other)
    assert other.builds == 1 and k2.key != k1.key
    assert len(entries(isolated_cache)) == 2


def test_entry_layout_and_manifest(isolated_cache, backend):
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    (entry,) = entries(isolated_cache)
    assert entry.name == kernel.key and entry.parent.name == kernel.key[:2]
    names = sorted(str(p.relative_to(entry)) for p in entry.rglob("*") if p.is_file())
    assert names == ["asm/lowered.txt", "asm/source.txt", "asm/tirx.txt", "kernel.so",
                     "manifest.json"]
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["kernel"] == "vadd" and manifest["key"] == kernel.key
    assert set(manifest["key_parts"]) >= {"tirx", "target", "options", "toolchain", "core",
                                          "plugin", "tvm", "tvm_ffi", "backend"}
    assert manifest["key_parts"]["target"] == "llvm-test:generic"
    assert kernel.artifact_path == entry / "kernel.so"
    assert list((isolated_cache / "v1" / "staging").iterdir()) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete_asm", "manifest"])
def test_corrupt_entry_is_detected_evicted_and_rebuilt(isolated_cache, damage):
    k1 = compile(kernels.vadd, out_idx=[-1], _backend=LlvmTestBackend())
    entry = entries(isolated_cache)[0]
    artifact = entry / "kernel.so"
    good = artifact.read_bytes()
    # Damage a NEW inode: this process still has the old file mapped (dlopen), and rewriting a
    # mapped library in place crashes the process; a fresh process would read the damaged bytes.
    artifact.unlink()
    if damage == "truncate":
        artifact.write_bytes(good[: len(good) // 2])
    elif damage == "flip":
        data = bytearray(good)
        data[len(data) // 2] ^= 0xFF
        artifact.write_bytes(bytes(data))
    elif damage == "delete_asm":
        artifact.write_bytes(good)
        (entry / "asm" / "source.txt").unlink()
    else:
        artifact.write_bytes(good)
        (entry / "manifest.json").write_text("{not json")
    clear_memory_cache()
    rebuilt = LlvmTestBackend()
    with pytest.warns(CacheCorruptionWarning, match="corrupt"):
        k2 = compile(kernels.vadd, out_idx=[-1], _backend=rebuilt)
    assert rebuilt.builds == 1 and not k2.from_cache and k2.key == k1.key
    run_vadd(k2)
    assert len((entry / "kernel.so").read_bytes()) == len(good)
    assert DiskCache(isolated_cache).lookup(k1.key) is not None
    assert list((isolated_cache / "v1" / "trash").iterdir()) == []


def test_disabled_cache_builds_every_time_and_writes_nothing(isolated_cache, monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    backend = LlvmTestBackend()
    kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    run_vadd(kernel)
    clear_memory_cache()
    compile(kernels.vadd, out_idx=[-1], _backend=backend)
    assert backend.builds == 2
    assert not isolated_cache.exists()
    assert kernel.artifact_path.is_file()  # a private temporary copy, alive with the kernel


def test_unusable_cache_dir_is_a_cache_error_with_the_fix(tmp_path, monkeypatch, backend):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(blocker))
    with pytest.raises(CacheError, match="TILELANG_CACHE_DIR.*TILELANG_DISABLE_CACHE=1"):
        compile(kernels.vadd, out_idx=[-1], _backend=backend)


def test_compile_error_carries_the_full_toolchain_log(isolated_cache):
    with pytest.raises(CompileError) as info:
        compile(kernels.vadd, out_idx=[-1], _backend=FailingBackend())
    assert "line 2: note: here" in info.value.log
    assert "fakecc -O3" in str(info.value)
    assert entries(isolated_cache) == []
    assert list((isolated_cache / "v1" / "staging").iterdir()) == []


def test_unexpected_backend_exception_becomes_compile_error_naming_stage(isolated_cache):
    class Broken(LlvmTestBackend):
        def codegen(self, mod, options):
            raise RuntimeError("internal codegen bug")

    with pytest.raises(CompileError, match="stage 'source' of kernel 'vadd'.*internal codegen bug") as info:
        compile(kernels.vadd, _backend=Broken())
    assert "Traceback" in info.value.log


def test_stale_staging_leftovers_do_not_break_publishing(isolated_cache, backend):
    cache = DiskCache(isolated_cache)
    leftover = isolated_cache / "v1" / "staging" / "deadbeef.1.abcd"
    leftover.mkdir()
    old = 10 * 24 * 3600
    os.utime(leftover, (os.path.getmtime(leftover) - old,) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(kernels.vadd, out_idx=[-1], _backend=backend)
    assert not leftover.exists()
    assert cache.lookup(entries(isolated_cache)[0].name) is not None


def test_compile_refuses_a_non_primfunc_with_a_hint(backend):
    from tilelang_core.errors import ConfigError
    from tilelang_core.jit import jit

    lazy = jit(kernels.make_scale, _backend=backend)
    with pytest.raises(ConfigError, match="expects a T.prim_func, got LazyJIT.*compile-time arguments"):
        compile(lazy, _backend=backend)


def test_lock_is_exclusive_across_lock_objects(isolated_cache):
    import threading

    cache = DiskCache(isolated_cache)
    entered = threading.Event()
    with cache.lock("k" * 64):
        t = threading.Thread(target=lambda: (cache.lock("k" * 64).__enter__(), entered.set()))
        t.daemon = True
        t.start()
        assert not entered.wait(0.3)
    assert entered.wait(5)


def test_backend_factory_receives_the_given_target(isolated_cache):
    made = []

    def factory(target):
        made.append(LlvmTestBackend(target=target))
        return made[-1]

    kernel = compile(kernels.vadd, out_idx=[-1], target=FakeTarget(arch="x1"), _backend=factory)
    assert made[0].target == FakeTarget(arch="x1") and kernel.target == FakeTarget(arch="x1")
    run_vadd(kernel)


def test_a_different_set_of_installed_plugins_misses(isolated_cache, tmp_path, monkeypatch):
    """Issue 25 item 4: a plugin runs code at import (it could patch code generation); a kernel built
    with it installed must not be served to a process without it, from a shared cache folder."""
    from tilelang_core.plugin.manager import set_plugin_manager
    from tilelang_core.testing.distributions import PLUGIN_SOURCE, make_plugin_distribution
    from tilelang_core.plugin import PLUGIN_API

    k1 = compile(kernels.vadd, out_idx=[-1], _backend=LlvmTestBackend())
    assert "tilelang-cpu==" in json.loads((entries(isolated_cache)[0] / "manifest.json").read_text())[
        "key_parts"]["installed_plugins"]
    make_plugin_distribution(tmp_path / "extra", distribution="tilelang-rewriter", entry_name="rewriter",
                             module="tilelang_rewriter_plugin",
                             source=PLUGIN_SOURCE.format(kind="rewriter", api=PLUGIN_API), version="2.1.0")
    monkeypatch.syspath_prepend(str(tmp_path / "extra"))
    set_plugin_manager(None)  # a process with one more plugin installed
    clear_memory_cache()
    other = LlvmTestBackend()
    k2 = compile(kernels.vadd, out_idx=[-1], _backend=other)
    assert other.builds == 1 and k2.key != k1.key and len(entries(isolated_cache)) == 2


def test_a_read_only_cache_folder_serves_its_kernels_and_new_ones_build_privately(isolated_cache, monkeypatch):
    """Issue 25 item 5: a shared, pre-warmed cache that this process cannot write was refused even
    when it held the kernel. (Simulated: tests run as root, whom file modes do not stop.)"""
    from tilelang_core.jit import cache as cache_module

    k1 = compile(kernels.vadd, out_idx=[-1], _backend=LlvmTestBackend())
    clear_memory_cache()

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self.base / "staging"))

    monkeypatch.setattr(cache_module.DiskCache, "_probe_writable", refuse)
    monkeypatch.setattr(cache_module, "_readonly_said", set())
    hit = LlvmTestBackend()
    with pytest.warns(cache_module.ReadOnlyCacheWarning, match="cannot be written.*private temporary folder") as record:
        k2 = compile(kernels.vadd, out_idx=[-1], _backend=hit)
    assert record[0].filename == __file__
    assert hit.builds == 0 and k2.from_cache and k2.key == k1.key
    run_vadd(k2)
    miss = LlvmTestBackend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once only
        k3 = compile(kernels.vsub, out_idx=[-1], _backend=miss)
    assert miss.builds == 1 and not k3.from_cache
    assert isolated_cache not in k3.artifact_path.parents and len(entries(isolated_cache)) == 1
