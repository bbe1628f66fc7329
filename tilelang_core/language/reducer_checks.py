"""The reducer protocol, checked on the parsed kernel before reducers are lowered.

A reducer (``T.alloc_reducer`` without ``replication=``) lives through epochs: ``T.reducer_init``
opens one, ``T.reducer_update`` inside ``T.Parallel`` contributes, ``T.finalize_reducer`` combines
and closes it. Between init and finalize the reducer's storage holds per-site partials, not the
value, so TileLang refuses what would read or overwrite them; so do we (a silent wrong answer
otherwise):

* an update or finalize before any init (``... before T.reducer_init``), a second init while an
  epoch is open (``double T.reducer_init``), an epoch never finalized (``never finalized``);
* a read of the reducer while its epoch is open, and any ordinary store, ``T.clear`` or
  ``T.fill`` of it (``illegal read of reducer`` / ``illegal store to reducer``);
* a finalize under other loops than its init's (``not in the scope of its T.reducer_init``): it
  would run per iteration of a loop the init is not in, or once for an epoch opened per iteration.
  A finalize inside a conditional of the init's scope is fine (it runs at most once per epoch).

The walk follows program order; the two arms of a conditional are walked separately and an epoch
counts as finalized after the conditional when either arm finalized it.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

_OPEN, _CLOSED = "open", "closed"


class _Walk:
    def __init__(self, reducers: dict, error):
        self.reducers = {h: r for h, r in reducers.items() if not r.legacy}
        self.error = error
        self.state: dict = {}  # handle -> (_OPEN, loop context) | (_CLOSED, None)

    def name(self, handle) -> str:
        return self.reducers[handle].buffer.name

    def reducer_handle(self, expr):
        if isinstance(expr, tvm.ir.TensorLoad):
            handle = expr.source.__chandle__()
            return handle if handle in self.reducers else None
        return None

    def marker(self, stmt):
        if isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tvm.ir.Call):
            name = getattr(stmt.value.op, "name", "")
            if name in ("tl.reducer_init", "tl.reducer_update", "tl.finalize_reducer"):
                return name
        return None

    def check_reads(self, node):
        """Refuse a load of a reducer whose epoch is open."""
        def on_load(load):
            handle = self.reducer_handle(load)
            if handle is not None and self.state.get(handle, (None,))[0] == _OPEN:
                raise self.error(f"illegal read of reducer {self.name(handle)} before T.finalize_reducer: "
                                 "between T.reducer_init and T.finalize_reducer it holds partial "
                                 "contributions; read the finalize's destination instead")
        tvm_ffi.structural_walk(node, [(tvm.ir.TensorLoad, on_load)])

    def visit(self, stmt, loops: tuple):
        marker = self.marker(stmt)
        if isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                self.visit(s, loops)
        elif isinstance(stmt, tirx.For):
            self.check_reads(stmt.extent)
            self.visit(stmt.body, loops + (stmt.loop_var.__chandle__(),))
        elif isinstance(stmt, tirx.While):
            self.check_reads(stmt.condition)
            self.visit(stmt.body, loops + (stmt.__chandle__(),))
        elif isinstance(stmt, tirx.IfThenElse):
            self.check_reads(stmt.condition)
            before = dict(self.state)
            self.visit(stmt.then_case, loops)
            after_then, self.state = self.state, dict(before)
            if stmt.else_case is not None:
                self.visit(stmt.else_case, loops)
            for handle in set(after_then) | set(self.state):
                if _CLOSED in (after_then.get(handle, (None,))[0], self.state.get(handle, (None,))[0]):
                    self.state[handle] = (_CLOSED, None)
        elif isinstance(stmt, tirx.AttrStmt):
            self.visit(stmt.body, loops)
        elif marker is not None:
            self.on_marker(stmt, marker, loops)
        elif isinstance(stmt, tirx.BufferStore) and stmt.buffer.__chandle__() in self.reducers:
            raise self.error(f"illegal store to reducer {stmt.buffer.name}: contribute with "
                             f"T.reducer_update({stmt.buffer.name}[...], value) inside T.Parallel")
        elif isinstance(stmt, tvm.tirx.TilePrimitiveCall):
            self.on_tile_op(stmt)
        else:
            self.check_reads(stmt)

    def on_tile_op(self, stmt):
        from ..ir import Fill, TileOp

        op = TileOp.from_stmt(stmt)
        if isinstance(op, Fill) and op.dst.source.__chandle__() in self.reducers:
            raise self.error(f"illegal store to reducer {op.dst.source.name} (T.clear / T.fill): a reducer "
                             "starts from T.reducer_init(acc) or T.reducer_init(acc, value)")
        self.check_reads(stmt)

    def on_marker(self, stmt, name, loops):
        args = stmt.value.args
        handle = self.reducer_handle(args[0])
        if handle is None:  # a legacy reducer's finalize
            return
        state = self.state.get(handle, (None, None))
        if name == "tl.reducer_init":
            self.check_reads(args[1])
            if state[0] == _OPEN:
                raise self.error(f"double T.reducer_init of reducer {self.name(handle)}: its epoch is still "
                                 "open; call T.finalize_reducer before starting another")
            self.state[handle] = (_OPEN, loops)
        elif name == "tl.reducer_update":
            self.check_reads(args[1])
            if state[0] != _OPEN:
                raise self.error(f"T.reducer_update of reducer {self.name(handle)} before T.reducer_init"
                                 + (" (its epoch was already finalized)" if state[0] == _CLOSED else ""))
        else:
            if state[0] != _OPEN:
                raise self.error(f"T.finalize_reducer of reducer {self.name(handle)} before T.reducer_init"
                                 + (" (its epoch was already finalized)" if state[0] == _CLOSED else ""))
            if state[1] != loops:
                raise self.error(f"T.finalize_reducer of reducer {self.name(handle)} is not in the scope of its "
                                 "T.reducer_init: put both under the same loops (a finalize may sit in a "
                                 "conditional of that scope)")
            self.state[handle] = (_CLOSED, None)


def check_reducer_protocol(body, reducers: dict, error) -> None:
    """Raise ``error(message)`` where ``body`` breaks the protocol of the module docstring."""
    walk = _Walk(reducers, error)
    if not walk.reducers:
        return
    walk.visit(body, ())
    for handle, (state, _) in walk.state.items():
        if state == _OPEN:
            raise error(f"reducer {walk.name(handle)} is never finalized: call T.finalize_reducer("
                        f"{walk.name(handle)}, dst) after its updates")


__all__ = ["check_reducer_protocol"]
