"""Names bound in kernel code (``x = expr`` -> ``tirx.Bind``) through the core passes:
tilelang_core/transform/bindings.py and LowerTileOps' analyzer bindings."""

import pytest
import tvm
from tvm import tirx

from tilelang_core.transform.bindings import (bound_vars, drop_bindings, is_invariant, is_pure,
                                              unique_bindings, written_buffers)
from tilelang_core.transform.lower_tile_ops import bind_loop_ranges


def _loop(var, extent, body, parallel=False):
    annotations = {"tl.parallel": tirx.const(1, "int32")} if parallel else None
    return tirx.For(var, tirx.const(0, "int32"), tirx.const(extent, "int32"), tirx.ForKind.SERIAL, body,
                    annotations=annotations)


def _use(buf, value):
    return tirx.BufferStore(buf, value, [tirx.const(0, "int32")])


def _peeled_twice():
    """What a pass that copies a loop body leaves: one Bind variable bound in two places to
    values with different ranges (sm_90a's peeled first consumer iteration did this)."""
    x = tirx.Var("k_idx", "int32")
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    out = tirx.decl_buffer((1,), "int32", name="out")
    first = _loop(i, 64, tirx.SeqStmt([tirx.Bind(x, i), _use(out, x)]))
    second = _loop(j, 64, tirx.SeqStmt([tirx.Bind(x, j + 64), _use(out, x + 1)]))
    return tirx.SeqStmt([first, second]), x


def test_a_binding_copied_by_a_pass_is_renamed_in_its_own_scope():
    stmt, x = _peeled_twice()
    renamed = unique_bindings(stmt)
    first, second = renamed.seq
    assert first.body.seq[0].var.same_as(x)  # the first definition keeps its variable
    new = second.body.seq[0].var
    assert not new.same_as(x) and str(new.name) == "k_idx"
    stored = second.body.seq[1].value
    assert stored.a.same_as(new)  # the use in the copy follows the copy's binding
    a, b = bound_vars(renamed)
    assert not a.same_as(b)


def test_the_analyzer_takes_copied_bindings_once_renamed():
    stmt, _ = _peeled_twice()
    with pytest.raises(Exception, match="different const bound"):
        bind_loop_ranges(tvm.sym.Analyzer(), stmt)
    bind_loop_ranges(tvm.sym.Analyzer(), unique_bindings(stmt))


def test_a_statement_without_duplicates_comes_back_unchanged():
    x, i = tirx.Var("x", "int32"), tirx.Var("i", "int32")
    out = tirx.decl_buffer((1,), "int32", name="out")
    stmt = _loop(i, 4, tirx.SeqStmt([tirx.Bind(x, i * 2), _use(out, x)]))
    assert unique_bindings(stmt).same_as(stmt)


def test_the_analyzer_rewrites_only_values_that_are_right_everywhere():
    """A pure value outside T.Parallel is a rewrite (alignment proofs need it); one built from a
    T.Parallel variable only has its range (LowerParallel replaces the variable afterwards); one
    read from memory is not bound at all (a rewrite could move the read past a store)."""
    ko, i = tirx.Var("ko", "int32"), tirx.Var("i", "int32")
    k0, q, v = tirx.Var("k0", "int32"), tirx.Var("q_idx", "int32"), tirx.Var("v", "int32")
    mem = tirx.decl_buffer((8,), "int32", name="idx")
    out = tirx.decl_buffer((1,), "int32", name="out")
    inner = _loop(i, 64, tirx.SeqStmt([tirx.Bind(q, ko * 64 + i), _use(out, q)]), parallel=True)
    body = _loop(ko, 4, tirx.SeqStmt([tirx.Bind(k0, ko * 32), tirx.Bind(v, tirx.BufferLoad(mem, [ko])),
                                       _use(out, k0 + v), inner]))
    analyzer = tvm.sym.Analyzer()
    bind_loop_ranges(analyzer, body)
    assert analyzer.can_prove(tirx.floormod(k0, 32) == 0)
    assert analyzer.can_prove(q < 256) and analyzer.can_prove(q >= 0)
    assert analyzer.simplify(q + 1).a.same_as(q)       # not rewritten into ko * 64 + i
    assert analyzer.simplify(v + 1).a.same_as(v)       # not rewritten into idx[ko]


def test_purity_and_invariance_of_bound_values():
    i = tirx.Var("i", "int32")
    table = tirx.decl_buffer((8,), "int32", name="table")
    regs = tirx.decl_buffer((8,), "int32", name="regs", scope="local")
    load = tirx.BufferLoad(table, [i])
    assert is_pure(tirx.max(i * 4, 3)) and is_pure(tirx.if_then_else(i > 0, i, 0))
    assert not is_pure(load) and not is_pure(tirx.call_extern("int32", "f", i))
    assert is_invariant(load + 1, written=[])                          # a read-only global tensor
    assert not is_invariant(load, written=written_buffers(_use(table, i)))  # the kernel writes it
    assert not is_invariant(tirx.BufferLoad(regs, [i]), written=[])    # registers: per thread


def test_dropped_bindings_leave_no_op_statements():
    x, i = tirx.Var("x", "int32"), tirx.Var("i", "int32")
    out = tirx.decl_buffer((1,), "int32", name="out")
    stmt = tirx.SeqStmt([tirx.Bind(x, i), _use(out, i)])
    assert bound_vars(drop_bindings(stmt, [x])) == []
