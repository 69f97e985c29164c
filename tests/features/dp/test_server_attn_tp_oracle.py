"""The server oracle's attention-TP padding and the refusal of the other rank layouts (plain
Python; the pipeline's side: test_server_attn_tp.py)."""

from __future__ import annotations

import pytest

from swafuzz.features.dp.server_rules import attn_tp_rows
from swafuzz.server.case import parse
from swafuzz.server.run import refusal


def _case(**cfg):
    return parse({"config": {"page_size": 1, **cfg},
                  "model": {"full_tokens": 64, "swa_tokens": 48, "sliding_window": 3},
                  "requests": [{"prompt_len": 3, "max_new_tokens": 3}]})


def test_rows_round_up_to_the_attention_tp_ranks():
    c = _case(tp_size=2, moe_dense_tp_size=1)
    assert c.config.attn_tp_size() == 2
    assert attn_tp_rows(c, "EXTEND", 7, 3, "eager") == (8, 3)  # EXTEND keeps its requests
    assert attn_tp_rows(c, "DECODE", 3, 3, "eager") == (4, 4)  # DECODE pads requests too
    assert attn_tp_rows(c, "DECODE", 4, 4, "eager") == (4, 4)
    assert attn_tp_rows(_case(), "DECODE", 3, 3, "eager") is None


@pytest.mark.parametrize("cfg", [{"tp_size": 2}, {"tp_size": 4, "moe_dense_tp_size": 1},
                                 {"tp_size": 4, "dp_size": 2, "enable_dp_attention": True,
                                  "moe_dense_tp_size": 1}])
def test_other_rank_layouts_are_refused_by_name(cfg):
    why = refusal(_case(**cfg))
    assert why and why.startswith("config.tp_size") and "moe_dense_tp_size 1" in why


def test_two_data_parallel_attention_ranks_are_run():
    """tp 2 / dp 2 with data-parallel attention: one pipeline per rank (tests/server/
    test_server_dp_config.py, tests/features/dp/test_sglang_dp_reach.py)."""
    assert refusal(_case(tp_size=2, dp_size=2, enable_dp_attention=True)) is None


def test_attention_tp_2_is_run_and_refuses_graphs():
    assert refusal(_case(tp_size=2, moe_dense_tp_size=1)) is None
    why = refusal(_case(tp_size=2, moe_dense_tp_size=1, disable_cuda_graph=False,
                        cuda_graph_bs_decode=[1, 2]))
    assert why and why.startswith("config.disable_cuda_graph")


def test_bad_moe_dense_tp_size_names_the_field():
    with pytest.raises(ValueError, match="config.moe_dense_tp_size"):
        _case(moe_dense_tp_size=0)
