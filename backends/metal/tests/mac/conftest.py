import sys

import pytest


def _has_metal() -> bool:
    if sys.platform != "darwin":
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.backends.mps.is_available())


def pytest_collection_modifyitems(config, items):
    if _has_metal():
        return
    skip = pytest.mark.skip(reason="needs macOS with a Metal device and torch with MPS")
    for item in items:
        if "/mac/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
