"""DSpark target verify and DP-padded EXTEND under a request window: the section of
``SEMANTICS.md`` beside this file, for :class:`features.request_window.engine.WindowPath`, which
hands the steps :meth:`DSparkPath.claims` to :meth:`DSparkPath.run` and asks
:meth:`DSparkPath.metadata` to finish their metadata. One decision per method (a mutant
overrides one): :meth:`~DSparkPath.verify_groups` (``num_groups = bs``, one run per request of
``num_draft_tokens`` rows), :meth:`~DSparkPath.install_early_verify` (no ``swa_out_cache_loc``
under a window: the W branch answers) and :meth:`~DSparkPath.pad_layout` (a DP-padded EXTEND:
the real rows' layout, then padding rows with their own workspace rows, no history, no commit).
Tensors: ``req`` / ``pos`` / ``floor`` int64 ``[rows]``, layouts :class:`LayoutT`."""

from __future__ import annotations

import torch

from swafuzz.features.parts import EnginePart, SGLangPart, lazy
from swafuzz.features.request_window.dspark.engine_graph import VerifyGraphRunner
from swafuzz.features.request_window.window import LayoutT, WinFwdObs, with_padding
from swafuzz.scenarios.case import Step
from swafuzz.targets.forward_mode import ForwardMode


class DSparkPath:
    """Window verify and DP-padded EXTENDs of one :class:`features.request_window.engine.WindowPath`."""

    #: the TARGET_VERIFY graph runner (features.dspark.engine_graph)
    graph_runner_cls = VerifyGraphRunner

    def __init__(self, path):
        self.p = path
        self.pad = 0  # padding rows of the forward being built (0: none)
        self.graph = None

    # -- steps ---------------------------------------------------------------------------------
    @staticmethod
    def claims(s: Step) -> bool:
        return (s.op == "verify" or (s.op == "extend" and bool(s.rank_tokens) and not s.tail_exec)
                or (s.op == "dp_decode" and s.dp_extend))

    def run(self, i: int, s: Step) -> list[WinFwdObs]:
        if s.op == "verify":
            return [self.verify(i, s)]
        if s.op == "extend":
            return [self.padded_extend(i, s)]
        return [self.padded_decode(i, s)]

    def verify(self, i: int, s: Step) -> WinFwdObs:
        """TARGET_VERIFY: ``T = num_draft_tokens`` rows per request, one run each; rejected
        draft tokens freed after the forward (``accept``)."""
        p, al = self.p, self.p.e.allocator
        T = p.e.gcfg.num_draft_tokens
        before = [(rid, len(al.tokens[rid])) for rid in s.rids]
        new = al.extend([(rid, T) for rid in s.rids])
        rows = [(p.slot[rid], n + j, 0) for rid, n in before for j in range(T)]
        locs = [f for sl in new for f in sl]
        if p.e.use_graph(s, len(s.rids)):  # the DSpark verify graph (features.dspark.engine_graph)
            if self.graph is None:
                self.graph = self.graph_runner_cls(p)
            out = self.graph.run(i, rows, locs)
        else:
            out = p.forward(i, ForwardMode.TARGET_VERIFY, rows, locs,
                            self.verify_groups(len(s.rids), len(rows)), None)
        if s.accept:
            al.reject([(rid, n, a) for (rid, n), a in zip(before, s.accept)], T)
        return out

    def padded_extend(self, i: int, s: Step) -> WinFwdObs:
        """``extend`` with ``rank_tokens``: the plain extend's rows (replay fold included),
        then ``max(rows, *rank_tokens) - rows`` padding rows (full location 0)."""
        rows, locs, _, _ = self.p.extend_rows(self.p.extend_per(s))
        return self.padded_forward(i, rows, locs, len(s.rids), s.rank_tokens)

    def padded_decode(self, i: int, s: Step) -> WinFwdObs:
        """``dp_decode`` rewritten to EXTEND (``dp_extend``): one row per rid, then padding."""
        p, al = self.p, self.p.e.allocator
        new = al.extend([(rid, 1) for rid in s.rids])
        rows = [(p.slot[rid], len(al.tokens[rid]) - 1, 0) for rid in s.rids]
        return self.padded_forward(i, rows, [sl[0] for sl in new], len(s.rids), s.rank_tokens)

    def padded_forward(self, i: int, rows, locs: list[int], groups: int, rank_tokens
                       ) -> WinFwdObs:
        pad = max([len(rows), *rank_tokens]) - len(rows)
        self.pad = pad
        try:
            return self.p.forward(i, ForwardMode.EXTEND, list(rows) + [(0, 0, 0)] * pad,
                                  list(locs) + [0] * pad, groups, None)
        finally:
            self.pad = 0

    # -- metadata ------------------------------------------------------------------------------
    def metadata(self, fb, core, req: torch.Tensor, floor: torch.Tensor, groups: int) -> None:
        """Called by the window path's metadata init (window pools) after the layout (a padded
        forward's from :meth:`pad_layout`): a verify gets :meth:`install_early_verify`."""
        if fb.forward_mode == ForwardMode.TARGET_VERIFY:
            self.install_early_verify(fb, core)

    def verify_groups(self, bs: int, rows: int) -> int:
        """``num_groups = bs``: one group per request."""
        del rows
        return bs

    def install_early_verify(self, fb, core) -> None:
        """The early verify metadata leaves no SWA location under a window: the W branch
        supplies the layout's workspace rows."""
        core.early_verify = True
        core.swa_out_cache_loc = None

    def pad_layout(self, req: torch.Tensor, pos: torch.Tensor, floor: torch.Tensor,
                   groups: int, pad: int) -> LayoutT:
        """The real rows' layout (:meth:`features.request_window.engine.WindowPath.layout`), then ``pad``
        padding rows: workspace rows ``groups * W + n + k``, commit false, in no run."""
        n = req.numel() - pad
        return with_padding(self.p.layout(req[:n], pos[:n], floor[:n], groups), pad)


class DSparkEngine(EnginePart):
    """The engine part: the window path's verify / DP-padded EXTEND class."""

    window_verify = DSparkPath


class DSparkSGLang(SGLangPart):
    """The ``sglang`` part: the release's window verify, the bare backend's attributes."""

    window_verify = lazy("swafuzz.features.request_window.dspark.sglang:SGLangDSpark")

    @staticmethod
    def bare_backend(backend) -> None:
        """``is_dspark_draft``: False (the adapter's bare backends are never a DSpark
        draft's)."""
        backend.is_dspark_draft = False
