"""An external swafuzz target, as a server team would write one (the worked example of
``docs/PLUGINS.md``).

``example:memo`` replaces one engine seam, the SWA pool, with a pool that memoises the full->SWA
translation by the number of locations: a later forward with the same batch size gets the
previous forward's SWA slots (the bug class of spec §2.7 / §9.6, keyed even more loosely).
``example:clean`` is the unchanged engine, registered by the same plugin.
"""

from __future__ import annotations

from swafuzz.targets.engine import UnifiedEngine
from swafuzz.targets.kv_pool import SWAKVPool


class LengthMemoPool(SWAKVPool):
    def translate_loc_from_full_to_swa(self, loc):
        key = loc.numel()
        memo = self.__dict__.setdefault("_memo", {})
        if key not in memo:
            memo[key] = super().translate_loc_from_full_to_swa(loc)
        return memo[key]


class LengthMemoEngine(UnifiedEngine):
    pool_cls = LengthMemoPool


class CleanEngine(UnifiedEngine):
    pass
