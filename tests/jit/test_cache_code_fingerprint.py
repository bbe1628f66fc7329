"""Cached kernels are keyed by the compiler's own code too: in an editable install the code changes
under the same version, and a kernel built by the old code must not be served."""

import os

from tilelang_core.jit.compiler import _code_fingerprint


def test_editing_a_module_of_the_package_changes_the_fingerprint(tmp_path):
    pkg = tmp_path / "acme_compiler"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    lowering = pkg / "sub" / "lowering.py"
    lowering.write_text("RULE = 1\n")
    before = _code_fingerprint(str(pkg / "__init__.py"))
    assert before == _code_fingerprint(str(pkg / "__init__.py"))  # stable while nothing changes

    lowering.write_text("RULE = 22\n")
    os.utime(lowering, ns=(1, 10**18))
    _code_fingerprint.cache_clear()  # a new process
    assert _code_fingerprint(str(pkg / "__init__.py")) != before
