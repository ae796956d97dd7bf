"""Measured runs as JSON: the environment they ran in and one entry per case.

A record looks like
  {"schema": 1, "environment": {...device, versions, date, commit...},
   "verification": [{"stage", "shapes", "max_rel_err"}],
   "cases": [{"rows", "cols", "dtype", "bytes", "mode",
              "copy": {"ms", "gbps"}, "torch_copy": {"ms", "gbps"},
              "results": [{"name", "ms", "gbps", "pct_sol", "spread"}]}]}
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path

import torch

SCHEMA = 1


def _git_commit() -> str:
    """HEAD of the checkout ('+changes' if tracked files differ), or $KERNELBOOK_COMMIT
    where the tree was copied without its .git (say, to a GPU machine)."""
    from .stages import repo_root

    if os.environ.get("KERNELBOOK_COMMIT"):
        return os.environ["KERNELBOOK_COMMIT"]
    try:
        root = repo_root()
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError, FileNotFoundError):
        return "unknown"
    return (sha + ("+changes" if dirty else "")) if sha else "unknown"


def environment() -> dict:
    env = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _git_commit(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env.update({
            "device": props.name,
            "sms": props.multi_processor_count,
            "capability": f"{props.major}.{props.minor}",
            "memory_gib": round(props.total_memory / 2**30, 1),
            "l2_mib": round(getattr(props, "L2_cache_size", 0) / 2**20, 1),
            "smem_per_block_optin": int(getattr(props, "shared_memory_per_block_optin", 0)),
        })
        from .toolchain import driver_version

        env["driver"] = driver_version() or "unknown"
    else:
        env["device"] = "cpu"
    return env


def new_record() -> dict:
    return {"schema": SCHEMA, "environment": environment(), "verification": [], "cases": []}


def validate(record: dict) -> dict:
    """Raise ValueError naming the first problem; return the record if it is sound."""
    def need(cond, msg):
        if not cond:
            raise ValueError(f"results record: {msg}")

    need(isinstance(record, dict) and record.get("schema") == SCHEMA, f"schema must be {SCHEMA}")
    env = record.get("environment", {})
    for key in ("device", "date", "commit", "torch"):
        need(isinstance(env.get(key), str) and env[key], f"environment.{key} missing")
    for case in record.get("cases", []):
        for key in ("rows", "cols", "bytes"):
            need(isinstance(case.get(key), int) and case[key] >= 0, f"case.{key} must be a non-negative int")
        need(case.get("mode") in ("eager+flush", "graph"), "case.mode must be 'eager+flush' or 'graph'")
        need(case.get("copy", {}).get("ms", 0) > 0, "case.copy.ms must be positive")
        need(case.get("results"), "case has no results")
        for r in case["results"]:
            need(isinstance(r.get("name"), str), "result.name missing")
            need(r.get("ms", 0) > 0 and r.get("gbps", 0) > 0, f"{r.get('name')}: ms and gbps must be positive")
            expect = 100.0 * case["copy"]["ms"] / r["ms"]
            need(abs(r.get("pct_sol", -1) - expect) <= 0.05 * expect + 0.1,
                 f"{r['name']}: pct_sol {r.get('pct_sol')} disagrees with copy/op time ({expect:.1f})")
    return record


def save(record: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(validate(record), indent=1) + "\n")
    return path


def load(path: str | Path) -> dict:
    return validate(json.loads(Path(path).read_text()))


def find_case(record: dict, cols: int, mode: str | None = None) -> dict:
    for case in record["cases"]:
        if case["cols"] == cols and (mode is None or case["mode"] == mode):
            return case
    raise KeyError(f"no case with cols={cols}" + (f" and mode={mode}" if mode else ""))


def device_line(record: dict) -> str:
    env = record["environment"]
    return f"{env['device']}, torch {env['torch']}, CUDA {env.get('cuda')}, {env['date'][:10]}, commit {env['commit']}"


def markdown_ladder(record: dict, stage_names: list[str]) -> str:
    """The README's chapter table: % of speed of light per stage at each large shape."""
    large = [c for c in record["cases"] if c["mode"] == "eager+flush"]
    header = "| stage | " + " | ".join(f"{c['rows']}×{c['cols']}" for c in large) + " |"
    lines = [header, "|" + "---|" * (len(large) + 1)]
    for name in stage_names:
        cells = []
        for case in large:
            r = next((r for r in case["results"] if r["name"] == name), None)
            cells.append(f"{r['gbps']:.0f} GB/s ({r['pct_sol']:.0f}%)" if r else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    copies = " | ".join(f"{c['copy']['gbps']:.0f} GB/s" for c in large)
    lines.append(f"| *copy (speed of light)* | {copies} |")
    return "\n".join(lines)
