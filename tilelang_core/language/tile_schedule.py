"""``T.PersistentTileScheduler`` and ``T.Persistent``: TileLang's persistent, grid-strided walks over
a grid of tiles (the scheduler as an object with state, ``T.Persistent`` as a ``for`` loop: its
class docstring).

A persistent kernel launches one worker per SM (or any ``num_workers``) and walks the
``num_m_tiles x num_n_tiles`` tiles itself: worker ``w`` takes the linear tiles ``w, w + workers,
w + 2 * workers, ...``::

    with T.Kernel(num_workers, threads=256) as (worker,):
        sched = T.PersistentTileScheduler(m_tiles, n_tiles, num_workers=num_workers, swizzle_size=8)
        sched.init(worker)
        while sched.valid():
            bx, by = sched.m_idx, sched.n_idx    # this tile; sched.current_iter counts them
            ...
            sched.next_tile()

A linear tile decodes as TileLang's does (``coord``): ``column_major`` (M fastest, the default) or
row-major; ``swizzle_size`` sweeps the fast axis for panels of that many slow-axis tiles (a
narrower last panel where it does not divide); ``cluster_size`` makes the grid one of cluster rows
(``ceildiv(num_m_tiles, cluster_size)`` rows: the caller adds its rank in the cluster).

The state (``m_idx``, ``n_idx``, ``linear_idx``, ``current_iter``) lives in ``T.alloc_var``
variables named ``{name}_m_idx`` and so on; ``stateful=False`` allocates none and offers only
``coord(tile_id)``, a pure decode. The methods emit plain statements where they are called, so
the walk is ordinary TIR (a ``while`` loop over variables) on every backend.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from .allocate import alloc_var
from .expr import ceildiv, max as max_, min as min_
from .kernel import current_kernel


def _positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FrontendError(f"T.PersistentTileScheduler: {what} must be a positive integer, got {value!r}")
    return value


class PersistentTileScheduler:
    """See the module docstring; TileLang's parameters and defaults."""

    def __init__(self, num_m_tiles, num_n_tiles, num_workers=None, swizzle_size: int = 1,
                 column_major: bool = True, cluster_size: int = 1, stateful: bool = True,
                 name: str | None = None):
        current_kernel("T.PersistentTileScheduler")
        self.swizzle_size = _positive_int(swizzle_size, "swizzle_size")
        self.cluster_size = _positive_int(cluster_size, "cluster_size")
        if num_workers is None:  # TileLang's default: one worker per SM of the GPU present
            from ..carver.arch import driver

            try:
                num_workers = driver.get_num_sms() // self.cluster_size
            except Exception as err:  # noqa: BLE001 - no CUDA device to ask
                raise FrontendError("T.PersistentTileScheduler: num_workers defaults to the GPU's SM count, "
                                    f"which cannot be read here ({err}); pass num_workers=") from None
        self.num_workers = num_workers
        self._column_major = bool(column_major)
        self._stateful = bool(stateful)
        rows = ceildiv(num_m_tiles, self.cluster_size) if self.cluster_size > 1 else num_m_tiles
        self._total_tiles = rows * num_n_tiles
        self._primary, self._secondary = (rows, num_n_tiles) if self._column_major else (num_n_tiles, rows)
        if self._stateful:
            self._state = {}
            for field in ("m_idx", "n_idx", "linear_idx", "current_iter"):
                var = alloc_var("int32")
                if name:
                    IRBuilder.name(f"{name}_{field}", var.scalar.source)
                self._state[field] = var.scalar.source

    # -- state -------------------------------------------------------------------------------
    def _buffer(self, field: str):
        if not self._stateful:
            raise FrontendError(f"T.PersistentTileScheduler(stateful=False) has no {field}; use coord(tile_id)")
        return self._state[field]

    def _get(self, field: str):
        return tirx.BufferLoad(self._buffer(field), [tirx.const(0, "int32")])

    def _set(self, field: str, value) -> None:
        B.buffer_store(self._buffer(field), value, [0])

    @property
    def m_idx(self):
        """The current tile's row (its cluster row when ``cluster_size > 1``)."""
        return self._get("m_idx")

    @property
    def n_idx(self):
        return self._get("n_idx")

    @property
    def linear_idx(self):
        return self._get("linear_idx")

    @property
    def current_iter(self):
        """How many tiles this worker has moved past (0 on its first)."""
        return self._get("current_iter")

    # -- the walk ----------------------------------------------------------------------------
    def coord(self, tile_id):
        """``(m, n)`` of linear tile ``tile_id`` (expressions; no state read or written)."""
        primary, secondary, swizzle = self._primary, self._secondary, self.swizzle_size
        group = tile_id // (primary * swizzle)
        base = group * swizzle
        # the last panel is narrower where swizzle does not divide; never 0, even past the end
        width = max_(1, min_(swizzle, secondary - base))
        in_group = tile_id - group * (primary * swizzle)
        fast, slow = in_group // width, base + in_group % width
        return (fast, slow) if self._column_major else (slow, fast)

    def _update(self):
        m, n = self.coord(self.linear_idx)
        self._set("m_idx", m)
        self._set("n_idx", n)

    def init(self, worker_id):
        """Start this worker's walk at linear tile ``worker_id``."""
        self._set("current_iter", 0)
        self._set("linear_idx", worker_id)
        self._update()

    def next_tile(self):
        self._set("current_iter", self.current_iter + 1)
        self._set("linear_idx", self.linear_idx + self.num_workers)
        self._update()

    def valid(self):
        """Is the current tile inside the grid? (the ``while`` condition)"""
        return self.linear_idx < self._total_tiles


class Persistent:
    """TileLang's ``T.Persistent(domain, wave_size, index, group_size=8)``: a persistent worker's
    walk over a grid of tiles as a ``for`` loop, ``for bx, by in T.Persistent([m, n], workers,
    worker):``.

    Wave ``w`` gives the worker the linear tile ``t = w * wave_size + index``. Tiles are numbered
    with the last dimension in panels of ``group_size`` (clamped to 1..its extent): ``t`` decodes
    mixed-radix as (panel, d0, ..., d_{n-2}, offset in the panel), fastest last, and the last
    coordinate is ``panel * group_size + offset``; so consecutive tiles sweep ``group_size`` columns
    of one row, then the next row, then the next panel. A tile past the last panel's edge (the
    panel padded up to ``group_size``) runs no body, and neither do the waves past the end. The
    loop is ``ceildiv(panels * d0 * ... * group_size, wave_size)`` waves long; the body sees the
    coordinates as names (parser.visit_for)."""

    def __init__(self, domain, wave_size, index, group_size=8):
        current_kernel("T.Persistent")
        if not isinstance(domain, (list, tuple)) or not domain:
            raise FrontendError(f"T.Persistent takes a non-empty list of extents, got {domain!r}")
        self.domain = list(domain)
        self.wave_size, self.index = wave_size, index
        last = self.domain[-1]
        if group_size is None:
            group_size = 8
        self.group = max_(1, min_(group_size, last))
        # (panels, d0, ..., d_{n-2}, group): the radices of a linear tile, slowest first
        self.radices = [ceildiv(last, self.group), *self.domain[:-1], self.group]
        padded = 1
        for r in self.radices:
            padded = padded * r
        self.padded = padded
        self.waves = ceildiv(padded, wave_size)

    def at(self, wave) -> tuple[list, object]:
        """(the coordinates of ``wave``'s tile, the condition that it is a tile of the domain)."""
        tile = wave * self.wave_size + self.index
        digits, rest = [], tile
        for radix in reversed(self.radices[1:]):
            digits.append(rest % radix)
            rest = rest // radix
        digits.append(rest)
        digits.reverse()  # (panel, d0, ..., d_{n-2}, offset)
        last = digits[0] * self.group + digits[-1]
        coords = [*digits[1:-1], last]
        return coords, tirx.all(tile < self.padded, last < self.domain[-1])


__all__ = ["Persistent", "PersistentTileScheduler"]
