"""Device properties by CUDA device index, as TileLang's ``carver.arch.driver`` answers them.

Read through torch (``torch.cuda.get_device_properties``), which every CUDA user of the JIT has.
"""

from __future__ import annotations


def _props(device_id: int):
    import torch

    if not torch.cuda.is_available():
        from ...errors import TileLangError

        raise TileLangError("tilelang.carver.arch.driver: no CUDA device is visible to torch "
                            "(torch.cuda.is_available() is False)")
    return torch.cuda.get_device_properties(device_id)


def get_num_sms(device_id: int = 0) -> int:
    """Streaming multiprocessors of CUDA device ``device_id`` (132 on an H200)."""
    return int(_props(device_id).multi_processor_count)


def get_device_name(device_id: int = 0) -> str:
    return str(_props(device_id).name)


def get_max_dynamic_shared_size_bytes(device_id: int = 0) -> int:
    """Shared memory one block may opt into (227 KiB on Hopper)."""
    props = _props(device_id)
    return int(getattr(props, "shared_memory_per_block_optin", props.shared_memory_per_block))


def get_shared_memory_per_block(device_id: int = 0) -> int:
    return int(_props(device_id).shared_memory_per_block)


def get_l2_cache_size(device_id: int = 0) -> int:
    return int(getattr(_props(device_id), "L2_cache_size", 0))


def get_registers_per_block(device_id: int = 0) -> int:
    return int(getattr(_props(device_id), "regs_per_multiprocessor", 65536))


__all__ = ["get_device_name", "get_l2_cache_size", "get_max_dynamic_shared_size_bytes", "get_num_sms",
           "get_registers_per_block", "get_shared_memory_per_block"]
