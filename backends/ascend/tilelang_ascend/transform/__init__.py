"""Ascend backend passes, in pipeline order (see pipeline.py)."""

from .insert_sync import insert_sync
from .lower_to_isa import lower_to_isa
from .plan_storage import plan_storage
from .split_cores import split_cores

__all__ = ["lower_to_isa", "insert_sync", "split_cores", "plan_storage"]
