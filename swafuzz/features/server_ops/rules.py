"""Rules of the server's own state changes (``flush``, ``refused_admit``;
``features/server_ops/SEMANTICS.md``): they run on the paged pool of the dense path, whose
allocator they reset or ask, and on the features that keep that allocator."""

from __future__ import annotations

from swafuzz import features
from swafuzz.scenarios.schema import CaseError

#: the features whose Cases keep the dense path's allocator and pools
WITH = ("dense", "server_ops", "prefix_share", "verify_reject", "remap", "dp", "padded_pages")


def validate(case) -> None:
    ops = [(i, s) for i, s in enumerate(case.steps) if s.op in ("flush", "refused_admit")]
    if not ops:
        return
    other = [f.name for f in features.features_using(case) if f.name not in WITH]
    if other:
        i, s = ops[0]
        raise CaseError(f"steps[{i}].op", f"{s.op} runs on the paged pool's allocator only; the "
                        f"Case uses feature(s) {', '.join(other)} (allowed: {', '.join(WITH)})")
    for i, s in ops:
        if s.op == "refused_admit" and (s.rid is None or s.length is None):
            raise CaseError(f"steps[{i}].{'rid' if s.rid is None else 'length'}",
                            "is required with op refused_admit")
