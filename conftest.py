"""Session-wide test settings for every test folder (tests/, backends/*/tests, plugins/*/tests)."""

import os
import tempfile


def pytest_configure(config):
    # Kernels compiled by tests go to a throwaway cache, never the user's ~/.cache/tilelang_core.
    if "TILELANG_CACHE_DIR" not in os.environ:
        os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilelang-test-cache-")
