"""Programmatic dependent launch (PDL, sm_90): TileLang's ``T.pdl_trigger()`` and ``T.pdl_sync()``.

Two kernels launched one after the other on a stream normally run one after the other. With PDL the
second may start while the first is still running: the first says when its dependents may start
(``T.pdl_trigger()``, once its blocks have written what the next kernel reads, or earlier where the
next kernel only reads after it waits), the second waits for the first kernel's memory before it
reads it (``T.pdl_sync()``). Work before ``T.pdl_sync()`` overlaps the first kernel's tail.

Both are scheduling: without them (or on a target without PDL) the kernels simply run in order, which
computes the same values. So the cuda backend compiles them to ``griddepcontrol`` on sm_90 and up and
launches a kernel that calls ``T.pdl_sync()`` with the programmatic-serialization attribute; other
targets and older archs drop them. Reading memory the previous kernel writes *before*
``T.pdl_sync()`` is a race, as in CUDA.

``T.sync_grid()`` is a barrier for every thread of every block of the kernel (CUDA's
``cooperative_groups::this_grid().sync()``): what any block wrote before it is visible to every
block after it, so a persistent kernel can run a second phase over the first phase's results. All
blocks must be running at once, so the cuda backend launches such a kernel cooperatively (a grid
larger than the GPU holds at once is refused by the launch) and every thread must reach each
call: inside ``T.Parallel``, under a branch on the thread or block index, or in a loop whose trip
count depends on them it would hang, and is refused at compile time. Targets without a grid
barrier (cpu, which runs blocks one after another; hip and metal here) refuse it by name.
"""

from __future__ import annotations

from ..ir import intrinsics as I
from .kernel import current_kernel


def pdl_trigger():
    """Let the kernel launched after this one on the stream start (``griddepcontrol.launch_dependents``,
    CUDA's ``cudaTriggerProgrammaticLaunchCompletion``): once every block has passed it or finished."""
    current_kernel("T.pdl_trigger")
    return I.call("pdl_trigger", "void")


def pdl_sync():
    """Wait until the kernel launched before this one has finished and its memory is visible
    (``griddepcontrol.wait``, CUDA's ``cudaGridDependencySynchronize``)."""
    current_kernel("T.pdl_sync")
    return I.call("pdl_sync", "void")


def sync_grid():
    """Wait until every thread of every block of the kernel has reached this point; memory written
    before it by any block is visible after it (module docstring)."""
    current_kernel("T.sync_grid")
    return I.call("sync_grid", "void")


__all__ = ["pdl_sync", "pdl_trigger", "sync_grid"]
