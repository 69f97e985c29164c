"""Small Cases the harness tests share (plain data: no target, no torch kernels run)."""

from swafuzz.scenarios.case import Case, GraphConfig, PoolConfig, Step

#: one request admitted, then two graph decodes through a bucket of 2 (a padded row each)
TWO_GRAPH_DECODES = Case(
    pool=PoolConfig(page_size=1, full_pages=4, swa_pages=4, window=2, layers=1, row_width=2),
    graph=GraphConfig(buckets=(2,)),
    steps=(Step(op="admit", rid=0, length=1), Step(op="decode", rids=(0,), exec="graph"),
           Step(op="decode", rids=(0,), exec="graph")),
    payload_seed=1, kind="decode")
