"""Names TileLang kernels use from its own TVM that apache-tvm 0.27 renamed.

Also ``expr.dtype`` on scalar expressions (``T.exp(x).dtype == "float32"``, ``n.dtype`` of a
``T.int32()`` variable): TVM 0.27 moved it to ``expr.ty.dtype`` and keeps ``.dtype`` only on
buffer variables; TileLang's code and tests read it everywhere.

TileLang's examples annotate helpers with ``tirx.PrimExpr`` (``from tvm import tirx``); in TVM 0.27
TIRX's scalar expressions are ``tvm.ir.Expr``. The alias is added to ``tvm.tirx`` once, when the
language loads, only where the name is missing, so TVM's own code is unaffected.
"""

import tvm

if not hasattr(tvm.tirx, "PrimExpr"):
    tvm.tirx.PrimExpr = tvm.ir.Expr
if not hasattr(tvm.tirx, "Call"):  # (tirx.Call: what T.exp(x) and friends return)
    tvm.tirx.Call = tvm.ir.Call


def _scalar_dtype(expr):
    ty = getattr(expr, "ty", None)
    if isinstance(ty, tvm.ir.PrimType):
        return ty.dtype
    raise AttributeError(f"{type(expr).__name__} of type {ty} has no dtype")


if not hasattr(tvm.ir.Expr, "dtype"):
    tvm.ir.Expr.dtype = property(_scalar_dtype)
_buffer_dtype = tvm.ir.Var.__dict__.get("dtype")
if isinstance(_buffer_dtype, property) and not getattr(_buffer_dtype.fget, "_tilelang_scalars", False):
    def _var_dtype(var, _buffer=_buffer_dtype.fget):
        return _buffer(var) if tvm.tirx.is_buffer_var(var) else _scalar_dtype(var)

    _patched = property(_var_dtype)
    _patched.fget._tilelang_scalars = True
    tvm.ir.Var.dtype = _patched
