"""Bug-zoo mutant of the request window's tags at history use (issue 12; addendum §5 W5).

==  ==========================  ============================================  ================
#   name                        bug (source)                                  kind (only)
==  ==========================  ============================================  ================
56  tags_deferred_to_step_end   the commit writes the ring rows but stamps    replay_separate
                                their tags only when the step ends: a
                                second forward of the same step (the
                                separate encoder replay forward, then the
                                extend) uses rows whose tags still say
                                "empty" (addendum §5 W5 and E1, §2.2
                                ``commit_packed_rows`` writes rows and tags
                                together; upstream ``RequestWindow.buffer``'s
                                ``dsv41.swa_history_present``)
==  ==========================  ============================================  ================

Bytes are untouched and every tag is right again when the step ends, so the ``window`` check
(workspace bytes per layer, tags and ring bytes after every step) passes; only the ``history``
check (:mod:`harness.history_checks`), which reads the tags at the moment of use, sees it.
Numbering continues after 55 (ring draft); the integrator may renumber.
"""

from __future__ import annotations

from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.mutants import mutant
from swafuzz.targets.window import RequestWindowModel


class _DeferredTagWindow(RequestWindowModel):
    """Ring rows committed at once; tags queued until :meth:`flush` (end of the step)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._pending: list = []

    def commit(self, layer: int) -> None:
        lay = self.layout
        m = lay.commit_mask
        dst = lay.req[m] * self.cap + lay.pos[m] % self.cap
        self.rows_of(self.state[layer])[dst] = \
            self.rows_of(self.buffer(layer))[lay.write_loc[m].long()]
        self._pending.append((layer, dst, lay.pos[m]))

    def flush(self) -> None:
        for layer, dst, pos in self._pending:
            self.tags[layer, dst] = pos
        self._pending = []

    def reset(self, slot: int) -> None:
        self.flush()  # a reset comes after the tags it clears
        super().reset(slot)


class _DeferredTagPath(UnifiedEngine.window_path_cls):  # the engine's path (tail graphs too)
    window_cls = _DeferredTagWindow

    def step_obs(self, i: int):
        if self.on:
            self.window.flush()
        return super().step_obs(i)


@mutant("tags_deferred_to_step_end", ("replay_separate",), "addendum §5 W5 (tags[layer, "
        "history_src] == history_pos at use; upstream RequestWindow.buffer's strict "
        "dsv41.swa_history_present) and E1, §2.2 (commit_packed_rows writes rows and tags "
        "together)")
class TagsDeferredToStepEnd(UnifiedEngine):
    window_path_cls = _DeferredTagPath
