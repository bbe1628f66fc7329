"""`import tilelang_core` stays cheap: no tvm, no torch, no plugin discovery."""

import json
import subprocess
import sys

CHECK = """
import json, sys, time
start = time.perf_counter()
import tilelang_core
elapsed = time.perf_counter() - start
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('tvm', 'tvm_ffi', 'torch', 'numpy', 'tilelang_cuda',
               'tilelang_cpu', 'tilelang_hip', 'tilelang_metal', 'tilelang_ascend', 'importlib_metadata'))
print(json.dumps({"heavy": heavy, "seconds": elapsed}))
"""


def test_import_does_not_load_tvm_torch_or_plugins():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["heavy"] == []


def test_target_values_work_without_tvm():
    code = ("import sys, tilelang_core as tl; t = tl.Target('cuda:sm_90a'); "
            "assert str(t) == 'cuda:sm_90a'; assert 'tvm' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_top_level_helpers_used_by_tilelang_kernel_factories():
    import tilelang_core as tl

    assert (tl.cdiv(1000, 128), tl.cdiv(1024, 128)) == (8, 8)
    assert [tl.next_power_of_2(n) for n in (0, 1, 2, 3, 300, 8192)] == [1, 1, 2, 4, 512, 8192]
    assert [tl.prev_power_of_2(n) for n in (1, 3, 300, 8192)] == [1, 2, 256, 8192]
