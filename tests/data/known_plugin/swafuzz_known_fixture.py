"""A test plugin for the ledger-aware campaign (``harness.ledger.known``; ``tests/harness/
test_known_campaign.py``): target ``fixture:ring_known_and_new``, the unified engine with two bugs
of the ``ring`` kind, built from two zoo mutants (``features.ring.mutants``):

* *the known one* (the test's temporary ledger has an entry for it): the ring allocator also
  pages SWA and writes ``M`` - mutant 46 ``ring_alloc_writes_mapping``, the model of sglang
  0.5.23's page-size-1 ``alloc`` (ledger ``ring-p1-alloc-writes-mapping``) - here, as upstream,
  only at page size 1. Signature ``invariants/ring/ring-r4``; most small ring Cases hit it.
* *the new one* (no entry): ``-1`` ring rows reach the store without the skip - mutant 44
  ``ring_unguarded_store`` (addendum §2.1, §6 A11), here only at page size > 1 (so shrinking a
  page-size-1 Case never meets it). Signature ``contracts/ring/refused``; rarer (tens of Cases
  to the first).

Not a zoo mutant (nothing new is injected): a fixture with one bug a ledger knows and one it does
not, loaded with ``--plugin swafuzz_known_fixture`` (this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

from swafuzz.features.ring.engine import RingAllocator
from swafuzz.features.ring.mutants import _UnguardedBackend, _WritesMappingAllocator
from swafuzz.targets import register
from swafuzz.targets.backend import DSV4Backend
from swafuzz.targets.engine import UnifiedEngine


class _PageSize1WritesMapping(_WritesMappingAllocator):
    def extend(self, plan):
        if self.page_size != 1:
            return RingAllocator.extend(self, plan)
        return super().extend(plan)


class _UnguardedAbovePageSize1(_UnguardedBackend):
    def store_skip_guard(self, loc):
        if self.page_size == 1:
            return DSV4Backend.store_skip_guard(self, loc)
        return super().store_skip_guard(loc)


class RingKnownAndNew(UnifiedEngine):
    own_allocator_cls = _PageSize1WritesMapping
    backend_cls = _UnguardedAbovePageSize1


register("fixture:ring_known_and_new", RingKnownAndNew)
