"""The conformance suite itself catches what it promises to catch."""

from tilelang_core.testing.conformance import forbidden_imports


def test_heavy_imports_of_a_plugin_module_are_reported():
    new = ["json", "re", "pluggy", "tilelang_core.plugin.specs", "tilelang_x.target", "numpy", "numpy.linalg",
           "torch", "tvm.ir", "tilelang_cuda._plugin"]
    assert forbidden_imports("tilelang_x._plugin", new) == ["numpy", "numpy.linalg", "torch", "tvm.ir",
                                                            "tilelang_cuda._plugin"]
