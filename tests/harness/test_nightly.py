"""Nightly exploration (marker ``nightly``; not in the CI gate): every scenario kind on
``unified`` with the real kernels (compiled Triton on GPU, the interpreter on CPU) under eager
and this machine's graph executor, with the ``nightly`` hypothesis profile (5000 examples,
randomized). Run: ``HYPOTHESIS_PROFILE=nightly pytest -m nightly``; a failure prints the
hypothesis reproduction blob and the swafuzz repro command of the shrunk Case.
"""

import pytest
from hypothesis import given

from swafuzz import features
from swafuzz.harness.pytest_plugin import check_case

pytestmark = pytest.mark.nightly


@pytest.mark.parametrize("kind", sorted(features.default_kind_names()))  # gated: own line
def test_explore(kind):
    @given(features.strategy(kind)())
    def prop(case):
        check_case(case, "unified", "auto")

    prop()
