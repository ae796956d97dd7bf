"""The benchmark ladder: for one op in one dtype, every stage that computes it
(up to a chapter), torch eager, torch.compile and peers such as Liger, verified
and then timed on the same shapes in one run, with the copy of the op's input
in the same interleaved rounds. The result is a results record.

A measurement is kept as a plain number only if it is possible and steady:
- impossible: faster than the copy of the op's input by more than the copy's
  own round-to-round spread;
- noisy: its own spread, (p90 - p10) / median over the rounds, above
  bench.SPREAD_LIMIT (the rule is bench.judge).
Such a contender is re-measured up to RETRIES times, in fresh rounds with the copy
and every other contender of the case, so that the numbers a case compares always
come from the same rounds (the GPU's speed can differ between attempts: on an H200
the copy of 1 x 4,096 floats took 1.53 us in one attempt and 1.14 us in the next).
If it stays so it is recorded as flagged, with the reason, and tables and plots
show it as flagged, never as a plain number.

Every result keeps its time in each round ("rounds_ms", in round order), so that
two contenders of a case can be compared round by round (results.versus).
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from . import bench, check, results
from .build import load_stage
from .ops import LARGE_COLS, SMALL_SHAPE, Op, dtype_name, dtype_of, get_op  # noqa: F401 (re-exported)
from .stages import Stage, cuda_stages

RETRIES = 2
# The copy runs on the op's own input when reading and writing it is at least this
# share of the op's bytes (bench's module docstring says why both ways).
COPY_SHARE = 0.99


def _raise_recompile_limits() -> None:
    # Every case compiles for its own shape after a reset; the limits only guard
    # against a reset being skipped.
    cfg = torch._dynamo.config
    for key in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(cfg, key):
            setattr(cfg, key, max(getattr(cfg, key), 256))


def default_shapes(op: Op | str = "rmsnorm", dtype="float32", large_bytes: int = bench.BIG_BYTES) -> list[tuple]:
    return get_op(op).ladder_shapes(dtype_of(dtype), large_bytes)


def stage_calls(op: Op, stages: list[Stage]) -> dict[str, Callable]:
    """label -> fn(inputs) for every kernel the ladder times in `stages`."""
    calls = {}
    for stage in stages:
        ops = load_stage(stage)
        for label, variant in stage.contenders():
            calls[label] = (lambda o, v: lambda inp: op.call_stage(o, inp, None, v))(ops, variant)
    return calls


def verify_stages(op: Op, dtype: torch.dtype, stages: list[Stage], record: dict | None = None,
                  shapes=None) -> list[dict]:
    rows = []
    for stage in stages:
        ops = load_stage(stage)
        for label, variant in stage.contenders():
            if not stage.checked(variant):
                continue  # E[x^2] - E[x]^2 and the like: timed to show what they cost, wrong by design
            checks = check.verify(op, ops, shapes, dtype, "cuda", variant)
            rows.append({"stage": label, "op": op.name, "dtype": dtype_name(dtype), "shapes": len(checks),
                         "max_rel_err": max(c.max_rel_err for c in checks)})
    if record is not None:
        record["verification"].extend(rows)
    return rows


def run_case(op: Op | str, dtype, shape, calls: dict[str, Callable], with_torch: bool = True,
             reps: int = 30) -> dict:
    """Time every call (plus torch's and peers' when `with_torch`) on `shape`,
    interleaved with the copy of its input; re-measure and flag as above."""
    op, dtype = get_op(op), dtype_of(dtype)
    shape = tuple(shape)
    nbytes = op.nbytes(shape, dtype)
    mode = bench.mode_for(nbytes)
    fns = dict(calls)
    if with_torch:
        _raise_recompile_limits()
        torch._dynamo.reset()  # compile afresh for this shape, during preparation
        fns.update(op.contenders())
    inputs: dict[int, dict] = {}

    def input_set(k):
        if k not in inputs:
            inputs[k] = op.make_inputs(shape, dtype, "cuda")
        return inputs[k]

    def maker(fn):
        def make_call(k):
            inp = input_set(k)
            return lambda: fn(inp)
        return make_call

    if bench.copy_moved(input_set(0)["x"]) >= COPY_SHARE * nbytes:
        copy_of, source = "op input", lambda k: input_set(k)["x"]  # into a fresh output, as the op writes
    else:
        copy_of, source = "own buffers", bench.copy_sources(nbytes)
    copies = bench.copy_contenders(source)
    todo = [bench.Contender(name, maker(fn)) for name, fn in fns.items()]
    copy_bytes = bench.copy_moved(source(0))
    entries: dict[str, dict] = {}
    case = {"op": op.name, "dtype": dtype_name(dtype), "shape": list(shape), "rows": math.prod(shape[:-1]),
            "cols": shape[-1], "bytes": nbytes, "mode": mode, "attempts": 0}
    with torch.no_grad():
        for attempt in range(1 + RETRIES):
            samples, timed_out = bench.time_round_robin(copies + todo, nbytes, reps, mode)
            copy = bench.summarize(bench.COPY, samples[bench.COPY], copy_bytes)
            torch_copy = bench.summarize(bench.TORCH_COPY, samples[bench.TORCH_COPY], copy_bytes)
            case["copy"] = {"ms": copy.ms, "gbps": copy.gbps, "spread": copy.spread, "of": copy_of}
            case["torch_copy"] = {"ms": torch_copy.ms, "gbps": torch_copy.gbps, "spread": torch_copy.spread}
            case["attempts"] = attempt + 1
            for c in todo:
                t = bench.summarize(c.name, samples[c.name], nbytes)
                why = bench.judge(t.gbps, t.spread, copy.gbps, copy.spread, timed_out)
                if attempt:
                    before = entries[c.name]
                    earlier = before["remeasured_after"] + [before["flag"] or "another contender was flagged"]
                else:
                    earlier = []
                entries[c.name] = {"name": c.name, "ms": t.ms, "gbps": t.gbps, "pct_sol": 100 * t.gbps / copy.gbps,
                                   "spread": t.spread, "copy_gbps": copy.gbps, "copy_spread": copy.spread,
                                   "flagged": bool(why), "flag": why, "remeasured_after": earlier,
                                   "rounds_ms": [float(f"{ms:.6g}") for ms in samples[c.name]]}
            if not any(entries[c.name]["flagged"] for c in todo):
                break
    case["results"] = [entries[name] for name in fns]
    inputs.clear()
    torch.cuda.empty_cache()
    return case


def measure_ladder(op: Op | str = "rmsnorm", dtype="float32", upto: int | str | None = None, shapes=None,
                   with_torch: bool = True, reps: int = 30, record: dict | None = None,
                   log: Callable[[str], None] = lambda _: None) -> dict:
    """Verify, then time, the stages of `op` in `dtype` up to chapter `upto` (and
    torch and peers) on `shapes`, adding to `record` (a new one by default)."""
    op, dtype = get_op(op), dtype_of(dtype)
    record = record if record is not None else results.new_record()
    stages = cuda_stages(upto, op.name, dtype_name(dtype))
    for row in verify_stages(op, dtype, stages, record):
        log(f"{row['stage']} ({row['dtype']}): verified on {row['shapes']} shapes, max rel err {row['max_rel_err']:.1e}")
    calls = stage_calls(op, stages)
    for shape in shapes or default_shapes(op, dtype):
        record["cases"].append(run_case(op, dtype, shape, calls, with_torch, reps))
        log("\n" + format_case(record["cases"][-1]))
    return results.validate(record)


def format_case(case: dict) -> str:
    """A plain-text ladder for one case: time, GB/s, % of speed of light, spread."""
    shape = "×".join(str(s) for s in case.get("shape", (case["rows"], case["cols"])))
    lines = [f"{case.get('op', 'rmsnorm')} {case['dtype']} {shape}, {case['bytes'] / 2**20:.3g} MiB moved, "
             f"{case['mode']}; copy {case['copy']['gbps']:.0f} GB/s (spread {case['copy'].get('spread', 0):.2f}; "
             f"torch copy_ {case['torch_copy']['gbps']:.0f})",
             f"{'contender':<34} {'time':>10} {'GB/s':>7} {'% SOL':>6} {'spread':>7}"]
    for r in case["results"]:
        if r.get("flagged"):
            lines.append(f"{r['name']:<34} {'FLAGGED':>10}  {r['flag']}")
        else:
            lines.append(f"{r['name']:<34} {r['ms'] * 1e3:>8.1f}us {r['gbps']:>7.0f} {r['pct_sol']:>5.1f}% "
                         f"{r['spread']:>7.3f}")
    return "\n".join(lines)
