"""The marker of an async copy's shared-memory write (``T.ptx_cp_async``).

``AttrStmt(0, ASYNC_WRITE, 1, <store>)``: the store is an async copy's landing. Barrier placement
(simt/transform/shared_races.py) never orders two such writes against each other, as TileLang's
ThreadSync doesn't; every backend's code generator prints the body as it is.
"""

ASYNC_WRITE = "tl.async_write"
