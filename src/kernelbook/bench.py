"""Timing on the GPU that the host can not fool.

Every timed call runs behind a gate: a tiny kernel that holds the stream until
the host has queued the L2 flush, the start event, the call and the end event
(see csrc/gate.cu). The GPU then runs the timed region back to back, so the
host's launch time (dynamo's guards, a Python wrapper, a busy CPU) never appears
as kernel time, in eager mode or in CUDA-graph replay.

Contenders are timed in interleaved rounds: each round times every contender
once, the copy of the op's input included, so a slow moment of the GPU hits them
all alike. Each round draws a fresh order (seeded: every run draws the same
ones), so that no contender always follows the same one and writes into the
output memory that one has just freed, as nearly all did when one fixed order
was rotated. (No bias from it was found: three copies of one kernel measured
within 0.5% of each other under either order, H200, 2026-11-23, five shapes, 50
rounds. But two contenders timing one kernel have differed by up to 0.9% since,
with intervals that excluded 1: in eager mode at 223,000 x 301 bf16 and, before
GRAPH_CAPTURES, in graph mode, H200, 2026-11-24, 30-40 rounds. Where each one's
output lies is the one thing such copies do not share, and a gap under about 1%
between two contenders is not resolved by this bench.) Large cases (at least
BIG_BYTES moved) run call by call, on EAGER_INPUT_SETS input sets in turn (one a
round, so that where one set happens to lie does not bias a whole case); small
ones are captured in a CUDA graph over rotating input sets (at most 256, each
read once per replay) and replayed. Either way every timing starts after
writing a buffer twice the L2's size.
Graph replays once skipped that flush and relied on the sets exceeding 3x the
L2, which the cap of 256 breaks for the smallest cases: 256 sets of one row of
4,096 floats are 12 MiB, so each replay found part of them still in L2 from the
contenders timed before it, more or less by the round's order. On an H100 that
spread the copy's rounds by 17% and the stages' by up to 37%
(book/results/rmsnorm-h100.json, 1 x 4,096 fp32); on an H200 the copy's by
18-19%, against 1.2-1.3% flushed (2026-11-24, 30 rounds, two runs each way).

Bandwidth counts the bytes an op must move: every input read once (weights
included) and every output written once. "% of speed of light" is the op's
bandwidth over the copy kernel's in the same rounds. Where the op's input and
output are nearly all of its bytes (every large case), the copy reads the op's
own input and writes a fresh tensor of its size, allocated per call as the op
allocates its output. The addresses matter: on an H100 (2026-11-23, 256 MiB
moved, 30 rounds) the same copy kernel took 93.4 us between buffers of its own
and 90.0 us from an op's input into the memory the op's output gets, a 3.7% gap
that had let ops "beat" the copy. Where a weight is a visible share of the bytes
(a few rows), the copy moves exactly the op's byte count between buffers of its
own instead: such cases are bound by latency, not by where the bytes live.

The copy is a plain one: 16-byte loads and stores, no cache hints. With an L2
evict_last policy on its loads the same copy runs faster, in the same rounds
(2026-11-25, 256 MiB moved, 40 rounds, the copies of three LayerNorm shapes
twice): 2.2-3.2% on an H200 (…8802), 0.9-1.5% on an H100 (…9582). An op that
loads its input with that policy (torch.compile's RMSNorm and LayerNorm; chapters
07 and 08 past the L2) can pass 100% of this copy by as much; the percentages
stay against the plain copy, as in every stored record. Measured on 2026-11-23
with the plain flush, which such lines outlived (see L2Flush), the hinted copy
had run 0.5-1.4% faster on an H200 and 0.5-2.2% slower on an H100; chapter 08's
notes on the policy date from then.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from dataclasses import dataclass
from typing import Callable

import torch

BIG_BYTES = 256 * 2**20  # at or above this, a case is "large": timed call by call with an L2 flush
EAGER, GRAPH = "eager+flush", "graph"
GATE_TIMEOUT_NS = 500_000_000  # a gate opens by itself after 0.5 s (an op that waits on the host)
COPY, TORCH_COPY = "copy (speed of light)", "torch copy_"
# With the gate, stages and the copy repeat within 1-3% round to round on an idle
# H100/H200 (the stored runs record each spread); the 0.34-0.80 spreads once seen
# for torch.compile were host time leaking into the timings. 10% is well above
# honest noise and below the gaps between rungs that the book discusses: a median
# with more spread than that can not carry a claim, so it is re-measured or flagged.
SPREAD_LIMIT = 0.10
# Graph mode captures each contender this many times, each capture with outputs
# of its own, and replays them in turn. Where a contender's outputs lie moves its
# time: four contenders timing one kernel, one capture each, differed by up to
# 0.9% with intervals that excluded 1 (H200, 2026-11-24, 256 x 4,096 floats, 30
# rounds); with four captures each, by at most 0.4%. Rotating the captures makes
# placement a round-to-round difference, which the paired interval then covers.
GRAPH_CAPTURES = 4
# Eager mode rotates this many input sets, one a round, every contender on the
# round's set. Where a large case's input and output lie moves the copy more than
# a kernel that reads a row before writing it (the copy reads and writes the same
# offsets at once): on an H200 (…2768, 2026-11-25, fp16 4,096 x 16,384, 30 rounds)
# nine placements of x and y moved the copy over 65.4-66.8 us and the LayerNorm
# over 67.9-68.4, so one placement put the LayerNorm anywhere in 95.8-97.7% of the
# copy. On another (…2732, 40 rounds, four trials with fresh inputs) it measured
# 95.4-98.7% on one input set (the copy 4,008-4,145 GB/s) and 97.3-97.8% rotating
# four (4,036-4,073). Rotating makes placement a round-to-round difference that
# every contender shares, as GRAPH_CAPTURES does for graph replays. (Rotating is
# also what exposed the plain flush's flaw: see L2Flush.)
EAGER_INPUT_SETS = 4
ORDER_SEED = 0  # the rounds' contender orders are random, and the same in every run


def round_orders(names: list[str], reps: int) -> list[list[str]]:
    """The order of every round: each a fresh shuffle of `names`, drawn from
    ORDER_SEED (see the module docstring for why not a rotation)."""
    rng = random.Random(ORDER_SEED)
    return [rng.sample(names, len(names)) for _ in range(reps)]


def rmsnorm_bytes(rows: int, cols: int, dtype: torch.dtype = torch.float32) -> int:
    from .ops import OPS

    return OPS["rmsnorm"].nbytes((rows, cols), dtype)


def judge(gbps: float, spread: float, copy_gbps: float, copy_spread: float, timed_out: bool = False) -> str:
    """Why a measurement can not stand as a plain number ('' if it can): the
    rule the ladder flags by and results records are checked against."""
    if timed_out:
        return "a gate timed out: the op waited on the host"
    if copy_spread > SPREAD_LIMIT:
        return f"copy reference noisy (spread {copy_spread:.2f})"
    if gbps > copy_gbps * (1 + copy_spread):
        return f"faster than the copy ({100 * gbps / copy_gbps:.0f}%) beyond its spread"
    if spread > SPREAD_LIMIT:
        return f"noisy (spread {spread:.2f} > {SPREAD_LIMIT})"
    return ""


def mode_for(nbytes: int) -> str:
    return EAGER if nbytes >= BIG_BYTES else GRAPH


def l2_bytes() -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 50 * 2**20))


class L2Flush:
    """Writing a buffer twice the L2's size evicts whatever the last run left there:
    first with an L2 evict_last policy, since lines an op loaded with that policy
    outlive plain writes (csrc/flush.cu has the measurements), then plain. With
    the plain flush alone, chapter 07's kernels ran up to 2% (H200) and 4% (H100)
    faster, and at 16-bit 65,536 columns 5-26%, once torch.compile (which loads x
    with that policy) had read the round's input set; with this one they time the
    same at any place in a round (H200 …6420, H100 …6641: 0.98-1.02).

    It leaves the L2 full of dirty lines, as a kernel inside a model finds it after
    the previous kernel's writes: the timed op writes them back as it goes and
    leaves its own output's last lines behind, so the bytes it pays for are its
    own. A read-only flush (a clean L2) made the 256 MiB cases on an H100 5-7%
    faster, the copy included (it lets up to an L2 of output stay unwritten at
    the end event), and by different amounts for different kernels."""

    def __init__(self):
        from .build import load_bench

        self._ops = load_bench()
        nbytes = -(-2 * l2_bytes() // 128) * 128  # whole 128-byte lines, as flush_l2 takes them
        self.buf = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
        # Once now, outside any gate: a kernel's first launch loads its module, which
        # waited on the GPU held by the gate until the gate gave up (0.5 s; H200, 2026-11-25).
        self()

    def __call__(self):
        self._ops.flush_l2(self.buf)


class Gate:
    """hold() queues a wait on the current stream; release() lets it pass. The
    ticket lives in pinned host memory that the waiting kernel polls."""

    def __init__(self):
        from .build import load_bench

        self._ops = load_bench()
        self.state = torch.zeros(2, dtype=torch.int32, pin_memory=True)  # [released ticket, timeouts]
        self._view = self.state.numpy()
        self._ticket = 0

    def hold(self):
        self._ticket += 1
        self._ops.gate_wait(self.state, self._ticket, GATE_TIMEOUT_NS)

    def release(self):
        self._view[0] = self._ticket

    @property
    def timed_out(self) -> bool:
        """Whether any wait gave up (read after synchronizing)."""
        return bool(self._view[1])


@dataclass
class Contender:
    name: str
    make_call: Callable[[int], Callable[[], object]]  # k-th input set -> a call with no arguments
    host_work: Callable[[], object] | None = None     # host-only work done right before each timed launch
                                                      # (tests use it to stand in for a slow launch)


@dataclass
class Timing:
    name: str
    ms: float           # median
    spread: float       # (p90 - p10) / median over the rounds: round-to-round noise
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


@dataclass
class Paired:
    """One contender against another over the same rounds: the median, over
    rounds, of theirs / ours in that round (above 1: ours is faster), and a
    distribution-free interval of that median (CONFIDENCE, from the order
    statistics). Pairing by round cancels what moves both in a round (clock,
    temperature, the neighbours' traffic), so the interval is several times
    narrower than comparing two medians, each with its own spread. `rounds` is
    0 where a record kept medians only: the interval is then the point."""
    ratio: float
    low: float
    high: float
    rounds: int

    @property
    def verdict(self) -> str:
        """'ahead' or 'behind' only where the whole interval says so; else 'tie'."""
        return "ahead" if self.low > 1 else "behind" if self.high < 1 else "tie"

    def __str__(self) -> str:
        span = f"[{self.low:.3f}, {self.high:.3f}]" if self.rounds else "(medians only)"
        return f"{self.ratio:.3f}x {span}"


CONFIDENCE = 0.95


def median_interval(n: int, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """0-based ranks (lo, hi) of the sorted samples that bound their median with at
    least `confidence`: the count of samples below the true median is
    Binomial(n, 1/2). Below 6 samples no ranks reach 95%: the extremes then."""
    tail, below, k = (1 - confidence) / 2, 0.0, 0
    while below + math.comb(n, k) / 2**n <= tail:
        below += math.comb(n, k) / 2**n
        k += 1
    return (k - 1, n - k) if k else (0, n - 1)


def paired(ours: list[float], theirs: list[float]) -> Paired:
    """`ours` and `theirs` are the times of the same rounds, in round order."""
    if len(ours) != len(theirs) or not ours:
        raise ValueError(f"paired rounds needed, got {len(ours)} and {len(theirs)}")
    ratios = sorted(t / o for o, t in zip(ours, theirs))
    lo, hi = median_interval(len(ratios))
    return Paired(statistics.median(ratios), ratios[lo], ratios[hi], len(ratios))


def input_sets(nbytes: int) -> int:
    """How many input sets a small case rotates through: enough to exceed 3x the
    L2 where 256 do, so that one replay reads each set once and no call finds an
    earlier call's data cached (the flush before each replay covers the rest)."""
    return min(256, max(2, math.ceil(3 * l2_bytes() / max(nbytes, 1))))


def _prepare(contender: Contender, mode: str, nbytes: int, warmup: int) -> tuple[Callable[[], object], int]:
    """Warm the contender up (lazy init, compilation, autotuning) and return the
    callable to time and how many op calls one timing covers."""
    if mode == EAGER:
        calls = [contender.make_call(k) for k in range(EAGER_INPUT_SETS)]
        for call in calls:
            for _ in range(warmup):
                call()
        turn = itertools.cycle(calls)  # called once a round: round r is on set r % EAGER_INPUT_SETS
        return lambda: next(turn)(), 1
    calls = [contender.make_call(k) for k in range(input_sets(nbytes))]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:  # warm up outside the graph
            call()
    torch.cuda.current_stream().wait_stream(stream)
    captures = []
    for _ in range(GRAPH_CAPTURES):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            # Keep every call's output alive: a freed output's memory would be handed to
            # the next call inside the capture, and the same few hundred KiB written
            # over and over would stay in L2, flattering ops that allocate their output.
            outputs = [call() for call in calls]
        captures.append((graph, outputs))
        for _ in range(warmup):
            graph.replay()
    turn = itertools.cycle(captures)

    def replay():
        graph, _ = next(turn)
        graph.replay()  # writes into its outputs, which `captures` keeps alive

    replay.captures = captures
    return replay, len(calls)


def time_round_robin(contenders: list[Contender], nbytes: int, reps: int = 30, mode: str | None = None,
                     warmup: int = 3, gated: bool = True) -> tuple[dict[str, list[float]], bool]:
    """Milliseconds per op call for every contender, `reps` interleaved rounds.
    All contenders are prepared (compiled, warmed, captured) before the first
    timing. Returns ({name: samples}, whether any gate timed out). `gated=False`
    times without the gate, only to show what the gate prevents: as a naive
    benchmark does, it waits for the GPU to finish before each timed call, so the
    host's delays can not hide behind queued work and always show."""
    mode = mode or mode_for(nbytes)
    prepared = {c.name: _prepare(c, mode, nbytes, warmup) for c in contenders}
    torch.cuda.synchronize()
    flush = L2Flush()
    gate = Gate()
    names = list(prepared)
    host_work = {c.name: c.host_work for c in contenders}
    events = []
    for round_order in round_orders(names, reps):
        for name in round_order:
            fn, per_timing = prepared[name]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if gated:
                gate.hold()
            else:
                torch.cuda.synchronize()
            flush()
            start.record()
            if host_work[name] is not None:
                host_work[name]()
            fn()
            end.record()
            if gated:
                gate.release()
            events.append((name, start, end, per_timing))
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for name, start, end, per_timing in events:
        samples[name].append(start.elapsed_time(end) / per_timing)
    return samples, gate.timed_out


def copy_contenders(source: Callable[[int], torch.Tensor]) -> list[Contender]:
    """The project's copy kernel (the speed of light) and torch's copy_, each
    copying `source(k)`, the k-th input set's tensor, into a fresh tensor
    allocated per call, as an op allocates its output. Each moves
    copy_moved(source(0)) bytes."""
    from .build import load_bench

    ops = load_bench()

    def ours(k):
        src = source(k)
        return lambda: ops.copy(src, torch.empty_like(src))

    def theirs(k):
        src = source(k)
        return lambda: torch.empty_like(src).copy_(src)

    return [Contender(COPY, ours), Contender(TORCH_COPY, theirs)]


def copy_moved(src: torch.Tensor) -> int:
    """Bytes a copy of `src` moves: read once, written once."""
    return 2 * src.numel() * src.element_size()


def copy_sources(nbytes: int) -> Callable[[int], torch.Tensor]:
    """k -> the k-th buffer of random bytes whose copy moves `nbytes` (every op
    moves an even count; at least 32), for a copy that does not run on an op's
    own memory."""
    sources: dict[int, torch.Tensor] = {}

    def source(k):
        if k not in sources:
            sources[k] = torch.randint(0, 256, (max(16, nbytes // 2),), dtype=torch.uint8, device="cuda")
        return sources[k]

    return source


def copy_speed_of_light(nbytes: int, reps: int = 30) -> tuple[Timing, Timing]:
    """(ours, torch's) copy of `nbytes` (half read, half written), timed in
    interleaved rounds."""
    source = copy_sources(nbytes)
    moved = copy_moved(source(0))
    samples, _ = time_round_robin(copy_contenders(source), moved, reps)
    return summarize(COPY, samples[COPY], moved), summarize(TORCH_COPY, samples[TORCH_COPY], moved)
