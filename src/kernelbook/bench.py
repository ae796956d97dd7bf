"""Timing on the GPU: device events, an L2 flush or rotating buffers, medians,
CUDA-graph replay for small shapes, and the speed-of-light copy of the same bytes.

Bandwidth counts the bytes an op must move: every input read once (weights
included) and every output written once. "% of speed of light" is the copy
kernel's time for the same byte count divided by the op's time, both measured in
the same run.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable

import torch

BIG_BYTES = 256 * 2**20  # at or above this, a case is "large": timed op by op with an L2 flush


def rmsnorm_bytes(rows: int, cols: int, dtype: torch.dtype = torch.float32) -> int:
    size = torch.empty((), dtype=dtype).element_size()
    return (2 * rows * cols + cols) * size  # read x, write y, read weight


def rows_for_bytes(nbytes: int, cols: int, dtype: torch.dtype = torch.float32) -> int:
    """Rows of length `cols` for an RMSNorm that moves about `nbytes`."""
    size = torch.empty((), dtype=dtype).element_size()
    return max(1, round(nbytes / (2 * cols * size)))


def l2_bytes() -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 50 * 2**20))


class L2Flush:
    """Writing a buffer twice the L2's size evicts whatever the last run left there."""

    def __init__(self):
        self.buf = torch.empty(2 * l2_bytes() // 4, dtype=torch.float32, device="cuda")

    def __call__(self):
        self.buf.fill_(1.0)


def time_eager(fn: Callable[[], object], reps: int = 30, warmup: int = 5, flush: L2Flush | None = None) -> list[float]:
    """Milliseconds per call, one pair of device events around each call."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        if flush is not None:
            flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        times.append((start, end))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in times]


def time_graph(calls: list[Callable[[], object]], reps: int = 20, warmup: int = 3) -> list[float]:
    """Milliseconds per call for small ops: the calls (one per rotating input set,
    so the L2 does not hold the previous call's data) are captured in a CUDA graph
    and replayed, which removes the launch gaps between them."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:  # warm up outside the graph (lazy init, autotuning)
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    for _ in range(warmup):
        graph.replay()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        times.append((start, end))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) / len(calls) for s, e in times]


@dataclass
class Timing:
    name: str
    ms: float           # median
    spread: float       # (p90 - p10) / median: repeat-to-repeat noise
    nbytes: int

    @property
    def gbps(self) -> float:
        return self.nbytes / (self.ms * 1e-3) / 1e9


def summarize(name: str, samples: list[float], nbytes: int) -> Timing:
    ordered = sorted(samples)
    med = statistics.median(ordered)
    p10 = ordered[int(0.1 * (len(ordered) - 1))]
    p90 = ordered[math.ceil(0.9 * (len(ordered) - 1))]
    return Timing(name, med, (p90 - p10) / med, nbytes)


def measure(make_call: Callable[[int], Callable[[], object]], nbytes: int, name: str, reps: int = 30) -> Timing:
    """Time an op that moves `nbytes`. `make_call(k)` returns a no-argument call
    on the k-th input set; large ops use one set and an L2 flush, small ones
    rotate through enough sets to exceed 3x the L2 inside a CUDA graph."""
    if nbytes >= BIG_BYTES:
        samples = time_eager(make_call(0), reps=reps, flush=L2Flush())
    else:
        sets = min(256, max(2, math.ceil(3 * l2_bytes() / max(nbytes, 1))))
        samples = time_graph([make_call(k) for k in range(sets)], reps=reps)
    return summarize(name, samples, nbytes)


def copy_speed_of_light(nbytes: int, reps: int = 30) -> tuple[Timing, Timing]:
    """The project's float4 copy kernel and torch's copy_, each moving `nbytes`
    (half read, half written). Returns (ours, torch's)."""
    from .build import load_copy

    ops = load_copy()
    n = max(4, nbytes // 8)
    pairs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def buffers(k):
        if k not in pairs:
            src = torch.randn(n, device="cuda")
            pairs[k] = (src, torch.empty_like(src))
        return pairs[k]

    def ours(k):
        src, dst = buffers(k)
        return lambda: ops.copy(src, dst)

    def theirs(k):
        src, dst = buffers(k)
        return lambda: dst.copy_(src)

    moved = 8 * n
    return measure(ours, moved, "copy (speed of light)", reps), measure(theirs, moved, "torch copy_", reps)
