"""The cudagraph executor: real ``torch.cuda.CUDAGraph`` capture and replay (GPU only).

``capture`` warms ``fn`` up on a side stream (both streams wait on each other, as serving engines
do), then captures it into a new graph. All graphs of one executor share one memory pool
(``torch.cuda.graph_pool_handle()``), so graphs must be replayed one at a time, never
concurrently (the pool reuses intermediates across graphs). ``replay`` launches the graph and
synchronizes the device, so results are ready (and errors surface) when it returns.
"""

from __future__ import annotations

from typing import Callable

import torch

from swafuzz.harness.executors.base import Executor


class CudaGraphHandle:
    """A captured graph; keeps the graph (and so its memory) alive."""

    __slots__ = ("graph", "replays")

    def __init__(self, graph: torch.cuda.CUDAGraph) -> None:
        self.graph = graph
        self.replays = 0

    def __repr__(self) -> str:
        return f"CudaGraphHandle(replays={self.replays})"


class CudaGraphExecutor(Executor):
    """Captures forwards as CUDA graphs sharing one memory pool; replays them synchronously."""

    name = "cudagraph"
    graphs = True

    def __init__(self, device: torch.device | str | None = None) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("executor 'cudagraph' needs a CUDA device and none is available "
                               "here; use executor 'tape' (the CPU emulation of CUDA-graph "
                               "semantics)")
        super().__init__(device if device is not None else "cuda")
        if self.device.type != "cuda":
            raise ValueError(f"CudaGraphExecutor(device={str(self.device)!r}): device must be cuda")
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        with torch.cuda.device(self.device):
            self._pool = torch.cuda.graph_pool_handle()

    def capture(self, fn: Callable[[], None]) -> CudaGraphHandle:
        if not callable(fn):
            raise TypeError(f"capture(fn): fn must be callable, got {type(fn).__name__}")
        with torch.cuda.device(self.device):
            main = torch.cuda.current_stream()
            side = torch.cuda.Stream()
            side.wait_stream(main)
            with torch.cuda.stream(side):
                fn()  # warm-up, for real
            main.wait_stream(side)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                fn()
            torch.cuda.synchronize()
        return CudaGraphHandle(graph)

    def replay(self, handle: object) -> None:
        if not isinstance(handle, CudaGraphHandle):
            raise TypeError("replay(handle): handle must come from CudaGraphExecutor.capture, "
                            f"got {type(handle).__name__}")
        with torch.cuda.device(self.device):
            handle.graph.replay()
            torch.cuda.synchronize()
        handle.replays += 1
