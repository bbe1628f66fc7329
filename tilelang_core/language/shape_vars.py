"""Symbolic sizes that appear only inside an expression of a tensor's shape
(``A: T.Tensor((n * 4,), ...)``, TileLang's annot tests): solved from the tensor at the call.

TVM binds a shape variable from the DLTensor only where it stands alone as a dimension; an
expression there becomes an assertion, which then reads an ``n`` that nothing defined ("variables
(n,) are used, but are not passed in as API arguments"). So after parsing, for every variable
that no dimension, stride or scalar parameter gives directly but that a dimension ``a * n + b``
does (``a`` a positive constant, ``b`` made of known sizes), that dimension becomes a variable of
its own, ``A_shape0``, and the kernel starts with::

    assert (A_shape0 - b) % a == 0 and A_shape0 >= b      # else the call is refused, naming A
    n = (A_shape0 - b) // a

so a tensor of 16 elements gives ``n = 4``, and one of 15 is refused instead of leaving an element
unwritten. Dimensions that are not affine in one unknown stay as they were (TVM refuses them).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import ir, tirx


def _vars_in(expr) -> list:
    found = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, found.append)])
    return found


def _known(func) -> list:
    known = []
    for p in func.params:
        if tirx.is_buffer_var(p):
            for e in list(p.ty.shape) + list(p.ty.strides or []):
                if isinstance(e, tirx.Var):
                    known.append(e)
        else:
            known.append(p)
    return known


def _affine(expr, var, analyzer):
    """(a, b) with ``expr == a * var + b`` and ``a`` a positive int, else None."""
    zero = tvm_ffi.structural_map(expr, [(tirx.Var, lambda v: tirx.const(0, v.ty.dtype) if v.same_as(var) else v)])
    one = tvm_ffi.structural_map(expr, [(tirx.Var, lambda v: tirx.const(1, v.ty.dtype) if v.same_as(var) else v)])
    b = analyzer.simplify(zero)
    a = analyzer.simplify(one - zero)
    if not isinstance(a, tirx.IntImm) or int(a.value) <= 0:
        return None
    if not analyzer.can_prove_equal(expr, a * var + b):
        return None
    return int(a.value), b


def solve_shape_vars(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every variable found only inside a shape expression solved (module doc)."""
    known = _known(func)
    analyzer = tvm.sym.Analyzer()
    solved = []  # variables, in the order their Binds run
    solving, checks, binds, replaced = [], [], [], {}
    params = list(func.params)
    # 1. which dimension solves which variable (the first that can)
    plan = {}
    for p in params:
        if not tirx.is_buffer_var(p):
            continue
        for axis, dim in enumerate(p.ty.shape):
            if isinstance(dim, (tirx.Var, tirx.IntImm)):
                continue
            unknown = {v.__chandle__(): v for v in _vars_in(dim)
                       if not any(v.same_as(k) for k in known + solved)}
            if len(unknown) != 1:
                continue
            var = next(iter(unknown.values()))
            form = _affine(dim, var, analyzer)
            if form is not None:
                plan[(p.__chandle__(), axis)] = (var, *form)
                solved.append(var)
    if not plan:
        return func
    # 2. every dimension that mentions a solved variable becomes a size of its own: the solving
    # ones define the variable (after checking the size can be produced), the others are checked
    # against the expression once every variable is defined
    for index, p in enumerate(params):
        if not tirx.is_buffer_var(p):
            continue
        shape = list(p.ty.shape)
        for axis, dim in enumerate(shape):
            entry = plan.get((p.__chandle__(), axis))
            mentions = not isinstance(dim, (tirx.Var, tirx.IntImm)) and any(
                v.same_as(s) for v in _vars_in(dim) for s in solved)
            if entry is None and not mentions:
                continue
            size = tirx.Var(f"{p.name}_shape{axis}", dim.ty.dtype)
            shape[axis] = size
            text = f"dimension {axis} of '{p.name}' is {dim}"
            if entry is not None:
                var, a, b = entry
                zero = isinstance(b, tirx.IntImm) and int(b.value) == 0
                solving.append(_assert(tirx.And(tirx.floormod(size - b, a) == 0, size >= b),
                                       f"{text}: the tensor's size there must be "
                                       + ("" if zero else f"{b} plus ") + f"a multiple of {a} (it sets {var.name})"))
                binds.append(tirx.Bind(var, tirx.floordiv(size - b, a)))
            else:
                checks.append(_assert(size == dim, f"{text}: the tensor's size there does not match the "
                                                   f"sizes the other tensors give"))
        t = p.ty  # (a fresh declaration: the type's default layout spells the old shape)
        new = tirx.decl_buffer(shape, t.dtype, name=p.name, strides=t.strides or None,
                               elem_offset=t.elem_offset, scope=str(t.storage_scope),
                               data_alignment=t.data_alignment, offset_factor=t.offset_factor)
        replaced[p.__chandle__()] = new
        params[index] = new
    body = tvm_ffi.structural_map(func.body, [(tirx.Var, lambda v: replaced.get(v.__chandle__(), v))])
    return tirx.PrimFunc(params, tirx.SeqStmt(solving + binds + checks + [body]), func.ret_type, func.attrs)


def _assert(cond, message: str):
    return tirx.AssertStmt(cond, ir.StringImm("ValueError"), [ir.StringImm(message)])
