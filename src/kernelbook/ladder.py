"""The benchmark ladder: every stage up to a chapter, plus torch's own RMSNorm,
verified then timed on the same shapes in one run, as a results record."""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from . import bench, check, results
from .build import load_stage
from .stages import cuda_stages

EPS = check.EPS
LARGE_COLS = (1024, 4096, 8192, 16384)
SMALL_SHAPE = (32, 4096)  # a decode-sized batch: launch overhead and latency matter


def torch_contenders() -> dict[str, Callable]:
    """torch's RMSNorm three ways: the manual formula, eager F.rms_norm, torch.compile."""
    def manual(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w

    def eager(x, w):
        return F.rms_norm(x, (x.shape[-1],), w, EPS)

    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    return {"torch manual formula": manual, "torch F.rms_norm": eager,
            "torch.compile F.rms_norm": torch.compile(eager, dynamic=False)}


def stage_contenders(upto: int | str) -> dict[str, Callable]:
    out = {}
    for stage in cuda_stages(upto):
        ops = load_stage(stage)
        out[stage.label] = (lambda o: lambda x, w: o.rms_norm(x, w, EPS))(ops)
    return out


def verify_stages(upto: int | str, record: dict | None = None, shapes=check.STANDARD_SHAPES) -> list[dict]:
    rows = []
    for stage in cuda_stages(upto):
        checks = check.verify_rms_norm(load_stage(stage), shapes, device="cuda")
        rows.append({"stage": stage.label, "shapes": len(checks),
                     "max_rel_err": max(c.max_rel_err for c in checks)})
    if record is not None:
        record["verification"].extend(rows)
    return rows


def run_case(contenders: dict[str, Callable], rows: int, cols: int, reps: int = 30) -> dict:
    nbytes = bench.rmsnorm_bytes(rows, cols)
    inputs: dict[int, tuple] = {}

    def maker(fn):
        def make_call(k):
            if k not in inputs:
                inputs[k] = check.random_rmsnorm_inputs((rows, cols), device="cuda")
            x, w = inputs[k]
            return lambda: fn(x, w)
        return make_call

    copy, torch_copy = bench.copy_speed_of_light(nbytes, reps)
    case = {"rows": rows, "cols": cols, "dtype": "float32", "bytes": nbytes,
            "mode": "eager+flush" if nbytes >= bench.BIG_BYTES else "graph",
            "copy": {"ms": copy.ms, "gbps": copy.gbps},
            "torch_copy": {"ms": torch_copy.ms, "gbps": torch_copy.gbps}, "results": []}
    for name, fn in contenders.items():
        t = bench.measure(maker(fn), nbytes, name, reps)
        case["results"].append({"name": name, "ms": t.ms, "gbps": t.gbps,
                                "pct_sol": 100.0 * copy.ms / t.ms, "spread": t.spread})
    inputs.clear()
    torch.cuda.empty_cache()
    return case


def default_shapes(large_bytes: int = bench.BIG_BYTES) -> list[tuple[int, int]]:
    return [(bench.rows_for_bytes(large_bytes, c), c) for c in LARGE_COLS] + [SMALL_SHAPE]


def measure_ladder(upto: int | str, shapes=None, with_torch: bool = True, reps: int = 30,
                   record: dict | None = None, log: Callable[[str], None] = lambda _: None) -> dict:
    """Verify, then time, stages 02..upto (and torch) on `shapes`, adding to `record`
    (a new one by default); `log` receives each verification line and case table."""
    record = record if record is not None else results.new_record()
    for row in verify_stages(upto, record):
        log(f"{row['stage']}: verified on {row['shapes']} shapes, max rel err {row['max_rel_err']:.1e}")
    contenders = stage_contenders(upto)
    if with_torch:
        contenders.update(torch_contenders())
    for rows, cols in shapes or default_shapes():
        record["cases"].append(run_case(contenders, rows, cols, reps))
        log("\n" + format_case(record["cases"][-1]))
    return results.validate(record)


def format_case(case: dict) -> str:
    """A plain-text ladder for one case: time, GB/s, % of speed of light, speedup."""
    lines = [f"{case['rows']} x {case['cols']} fp32, {case['bytes'] / 2**20:.0f} MiB moved, "
             f"{case['mode']}; copy {case['copy']['gbps']:.0f} GB/s (torch copy_ {case['torch_copy']['gbps']:.0f})",
             f"{'stage':<28} {'time':>10} {'GB/s':>7} {'% SOL':>6} {'vs prev':>8}"]
    prev = None
    for r in case["results"]:
        speedup = f"{prev / r['ms']:.2f}x" if prev and not r["name"].startswith("torch") else ""
        lines.append(f"{r['name']:<28} {r['ms'] * 1e3:>8.1f}us {r['gbps']:>7.0f} {r['pct_sol']:>5.1f}% {speedup:>8}")
        if not r["name"].startswith("torch"):
            prev = r["ms"]
    return "\n".join(lines)
