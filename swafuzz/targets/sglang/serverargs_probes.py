"""The environment probes :mod:`swafuzz.targets.sglang.serverargs` answers, while a
``ServerArgs`` is built on a CPU machine, as a GPU runner (H200, or B200 when asked) would.

Only probes are replaced, never a validation rule: functions of ``sglang.srt.utils.common`` that
ask what the machine is (``is_cuda``, SM level, GPU memory) and torch's capability query. Each
is swapped for one build in ``utils.common`` and every loaded ``sglang`` module that imported it
by name, then restored (0.5.22+ ``get_platform()`` reads through ``utils.common``, so it follows).
Not replaced (:data:`NOT_PATCHED`): values computed from a probe at import time (``_is_cuda =
is_cuda()``) keep the CPU's answer; the V4 argument checks call their probes at validation time.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

COMMON = "sglang.srt.utils.common"

#: the H200's memory as its driver reports it (MiB): the figure the release's memory-based
#: defaults (chunked prefill size, CUDA-graph batch sizes, memory fraction) are computed from
H200_MEMORY_MIB = 143771.0
B200_MEMORY_MIB = 183359.0


@dataclass(frozen=True)
class Probe:
    """One replaced probe: where it lives (``utils.common`` name, or ``torch.cuda.NAME``),
    what it answers, and why the release's checks need that answer."""

    name: str
    value: object
    reason: str


def _platform(sm: int, memory_mib: float, gpu: str) -> tuple[Probe, ...]:
    blackwell = sm >= 100
    return (
        Probe("is_cuda", True, "the GPU runners are CUDA machines; the V4.1 checks refuse "
              "encoder SWA bounded replay on hardware other than CUDA (or gfx950)"),
        Probe("is_cuda_alike", True, "as is_cuda"),
        Probe("is_hip", False, "not ROCm (also the CPU's answer; pinned so a ROCm host agrees)"),
        Probe("is_npu", False, "not Ascend: the DSV4 page size (256 vs 128) depends on it"),
        Probe("is_xpu", False, "not an Intel GPU"),
        Probe("is_musa", False, "not a Moore Threads GPU"),
        Probe("is_mps", False, "not Apple MPS (the MPS validation would run instead)"),
        Probe("is_hpu", False, "not Habana"),
        Probe("is_gfx95_supported", False, "not an AMD gfx950 (a V4.1 replay check asks)"),
        Probe("is_gfx1250_supported", False, "not an AMD gfx1250"),
        Probe("is_sm90_supported", sm == 90, f"{gpu}: SM {sm}"),
        Probe("is_hopper_with_cuda_12_3", sm == 90, f"{gpu}: SM {sm}"),
        Probe("is_sm100_supported", blackwell, f"{gpu}: the DSV4 attention backend default "
              "(flashmla vs flashmla_mega) and the trtllm backend's checks ask for SM100"),
        Probe("is_sm100_or_sm110_supported", blackwell, f"{gpu}: SM {sm}"),
        Probe("is_sm110_supported", False, f"{gpu}: SM {sm}"),
        Probe("is_sm120_supported", False, f"{gpu}: SM {sm}"),
        Probe("is_blackwell_supported", blackwell, f"{gpu}: SM {sm}"),
        Probe("get_device_sm", sm, f"{gpu}: SM {sm}"),
        Probe("get_device_capability", (sm // 10, sm % 10), f"{gpu}: compute capability"),
        Probe("torch.cuda.get_device_capability", (sm // 10, sm % 10),
              "read directly by the release's attention / model hooks"),
        Probe("get_device_name", f"NVIDIA {gpu}", "the GPU's name, read by some defaults"),
        Probe("get_device_memory_capacity", memory_mib, f"{gpu}'s memory (MiB): the "
              "memory-based defaults (chunked prefill, CUDA-graph batch sizes)"),
        Probe("get_nvgpu_memory_capacity", memory_mib, "as get_device_memory_capacity"),
        Probe("cpu_has_amx_support", False, "the CPU backend's fact; a GPU runner's "
              "CUDA path does not use it (pinned so hosts agree)"),
    )


#: platform name -> the probes replaced for it; ``h200`` is the default (the GPU runners)
PLATFORMS: dict[str, tuple[Probe, ...]] = {
    "h200": _platform(90, H200_MEMORY_MIB, "H200"),
    "b200": _platform(100, B200_MEMORY_MIB, "B200"),
}

#: what is knowingly left as the CPU answers it, with why that is acceptable here
NOT_PATCHED: tuple[tuple[str, str], ...] = (
    ("module-level values computed from a probe at import (e.g. _is_cuda = is_cuda())",
     "computed before any build; the DeepSeek-V4 / V4.1 argument checks call their probes "
     "at validation time (read in 0.5.12, 0.5.22, 0.5.23)"),
    ("sglang.srt.platforms.current_platform (the out-of-tree platform plugin object)",
     "the CPU's base platform applies no server-argument defaults, as the in-tree CUDA "
     "platform applies none"),
    ("is_flashinfer_available (False: flashinfer is not installed in the CPU environments)",
     "answering True makes modules imported during the build import flashinfer; the DSV4 "
     "hooks read it only to pick the SM100 MXFP8 GEMM runner, which no SWA rule depends on"),
    ("torch.cuda.is_available",
     "left False so nothing the build imports tries to initialise a CUDA context"),
)


def _fake(value: object):
    def probe(*_args: object, **_kwargs: object) -> object:
        return value

    probe.swafuzz_probe = True  # type: ignore[attr-defined]
    return probe


def _swap(originals: dict[int, object], replacements: dict[int, object]) -> None:
    """Replace, in every loaded sglang module, each attribute that is one of ``originals``'
    objects (keyed by id) by its replacement."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "sglang" or name.startswith("sglang.")):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            key = id(value)
            if key in originals and originals[key] is value:
                setattr(module, attr, replacements[key])


@contextmanager
def patched_probes(platform: str) -> Iterator[tuple[Probe, ...]]:
    """Answer the release's environment probes as ``platform`` (a key of
    :data:`PLATFORMS`) for the duration; yields the probes that exist in this release."""
    if platform not in PLATFORMS:
        raise ValueError(f"platform: {platform!r} is not one of {sorted(PLATFORMS)}")
    common = importlib.import_module(COMMON)
    present = []
    originals: dict[int, object] = {}
    fakes: dict[int, object] = {}
    torch_saved = None
    for probe in PLATFORMS[platform]:
        if probe.name.startswith("torch.cuda."):
            attr = probe.name.rsplit(".", 1)[1]
            torch_saved = (attr, getattr(torch.cuda, attr))
            setattr(torch.cuda, attr, _fake(probe.value))
            present.append(probe)
            continue
        orig = getattr(common, probe.name, None)
        if orig is None:
            continue
        fake = _fake(probe.value)
        originals[id(orig)] = orig
        fakes[id(orig)] = fake
        present.append(probe)
    _swap(originals, fakes)
    try:
        yield tuple(present)
    finally:
        back = {id(fake): orig for orig, fake in
                ((originals[k], fakes[k]) for k in originals)}
        _swap({id(f): f for f in fakes.values()}, back)
        if torch_saved is not None:
            setattr(torch.cuda, torch_saved[0], torch_saved[1])
