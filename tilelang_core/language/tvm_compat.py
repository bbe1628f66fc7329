"""Names TileLang kernels use from its own TVM that apache-tvm 0.27 renamed.

TileLang's examples annotate helpers with ``tirx.PrimExpr`` (``from tvm import tirx``); in TVM 0.27
TIRX's scalar expressions are ``tvm.ir.Expr``. The alias is added to ``tvm.tirx`` once, when the
language loads, only where the name is missing, so TVM's own code is unaffected.
"""

import tvm

if not hasattr(tvm.tirx, "PrimExpr"):
    tvm.tirx.PrimExpr = tvm.ir.Expr
if not hasattr(tvm.tirx, "Call"):  # (tirx.Call: what T.exp(x) and friends return)
    tvm.tirx.Call = tvm.ir.Call
