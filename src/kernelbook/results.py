"""Measured runs as JSON: the environment they ran in and one entry per case.

A record looks like
  {"schema": 2, "environment": {...device, versions, date, commit...},
   "verification": [{"stage", "op", "dtype", "shapes", "max_rel_err"}],
   "cases": [{"op", "dtype", "shape", "rows", "cols", "bytes", "mode", "attempts",
              "copy": {"ms", "gbps", "spread", "of"}, "torch_copy": {"ms", "gbps", "spread"},
              "results": [{"name", "ms", "gbps", "pct_sol", "spread", "copy_gbps",
                           "copy_spread", "flagged", "flag", "remeasured_after", "rounds_ms"}]}]}
"pct_sol" is a result's bandwidth over "copy_gbps", the copy measured in the same
rounds as that result; the copy's "of" says what it copied: "op input" (the op's
own input into a fresh output) or "own buffers" (see kernelbook.bench). When any
result of a case is re-measured, all of them are, so every result of a case comes
from the same rounds; "remeasured_after" lists why each earlier attempt did not
stand. "rounds_ms" is the result's time in each round of the attempt that stood,
in round order (records before it keep medians only).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
from pathlib import Path

import torch

from .bench import Paired, judge, paired

SCHEMA = 2


def _git_commit() -> str:
    """This checkout's HEAD ('+changes' if tracked files differ), or $KERNELBOOK_COMMIT
    where the tree was copied without its .git (say, to a GPU machine). A copy of
    the tree inside some other git checkout is not ours: its HEAD is not recorded."""
    from .stages import repo_root

    if os.environ.get("KERNELBOOK_COMMIT"):
        return os.environ["KERNELBOOK_COMMIT"]
    root = repo_root()

    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()

    try:
        top = git("rev-parse", "--show-toplevel")
        if not top or Path(top).resolve() != root.resolve():
            return "unknown (not a git checkout of kernelbook; set KERNELBOOK_COMMIT)"
        sha = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
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
        for key in ("op", "dtype"):
            need(isinstance(case.get(key), str) and case[key], f"case.{key} missing")
        need(case.get("mode") in ("eager+flush", "graph"), "case.mode must be 'eager+flush' or 'graph'")
        need(case.get("copy", {}).get("ms", 0) > 0, "case.copy.ms must be positive")
        need(case.get("results"), "case has no results")
        for r in case["results"]:
            need(isinstance(r.get("name"), str), "result.name missing")
            need(r.get("ms", 0) > 0 and r.get("gbps", 0) > 0, f"{r.get('name')}: ms and gbps must be positive")
            need(isinstance(r.get("flagged"), bool), f"{r['name']}: 'flagged' must be true or false")
            need(not r["flagged"] or r.get("flag"), f"{r['name']}: a flagged result must say why")
            if not r["flagged"]:
                why = judge(r["gbps"], r["spread"], r.get("copy_gbps", case["copy"]["gbps"]),
                            r.get("copy_spread", case["copy"].get("spread", 0.0)))
                need(not why, f"{r['name']}: unflagged, but {why}")
            if "rounds_ms" in r:
                rounds = r["rounds_ms"]
                need(rounds and abs(statistics.median(rounds) - r["ms"]) <= 1e-4 * r["ms"],
                     f"{r['name']}: ms is not the median of its rounds")
            expect = 100.0 * r["gbps"] / r.get("copy_gbps", case["copy"]["gbps"])
            need(abs(r.get("pct_sol", -1) - expect) <= 0.001 * expect + 0.01,
                 f"{r['name']}: pct_sol {r.get('pct_sol')} disagrees with its bandwidth over the copy's ({expect:.1f})")
    return record


def save(record: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(validate(record), indent=1) + "\n")
    return path


def load(path: str | Path) -> dict:
    return validate(json.loads(Path(path).read_text()))


def find_case(record: dict, cols: int | None = None, mode: str | None = None, op: str | None = None,
              dtype: str | None = None, shape=None) -> dict:
    """The first case matching every criterion given."""
    for case in record["cases"]:
        if ((cols is None or case["cols"] == cols) and (mode is None or case["mode"] == mode)
                and (op is None or case["op"] == op) and (dtype is None or case["dtype"] == dtype)
                and (shape is None or tuple(case["shape"]) == tuple(shape))):
            return case
    raise KeyError(f"no case with cols={cols}, mode={mode}, op={op}, dtype={dtype}, shape={shape}")


def find_result(case: dict, name_start: str) -> dict:
    """A contender's result in a case, its name matched by its start (e.g. '05')."""
    for r in case["results"]:
        if r["name"].startswith(name_start):
            return r
    raise KeyError(f"no result starting with {name_start!r} in {[r['name'] for r in case['results']]}")


def versus(case: dict, ours: str, theirs: str) -> Paired:
    """`ours` against `theirs` in one case (names matched by their start): the
    paired ratio theirs / ours over the case's rounds, with its interval (above
    1: ours is faster). A record that kept medians only gives their ratio, with
    no interval (rounds 0)."""
    a, b = find_result(case, ours), find_result(case, theirs)
    if "rounds_ms" in a and "rounds_ms" in b:
        return paired(a["rounds_ms"], b["rounds_ms"])
    ratio = b["ms"] / a["ms"]
    return Paired(ratio, ratio, ratio, 0)


def device_line(record: dict) -> str:
    env = record["environment"]
    return f"{env['device']}, torch {env['torch']}, CUDA {env.get('cuda')}, {env['date'][:10]}, commit {env['commit']}"


def ladders(record: dict) -> list[tuple[str, str]]:
    """The (op, dtype) pairs measured in a record, in order."""
    seen = []
    for case in record["cases"]:
        if (case["op"], case["dtype"]) not in seen:
            seen.append((case["op"], case["dtype"]))
    return seen


def cell(r: dict) -> str:
    """A result for a table: the number, or 'flagged' with the reason."""
    if r.get("flagged"):
        return f"flagged: {r['flag']}"
    return f"{r['gbps']:.0f} GB/s ({r['pct_sol']:.0f}%)"


def markdown_ladder(record: dict, op: str, dtype: str) -> str:
    """A table of every contender at each case of one op and dtype: GB/s and % of
    the copy, or 'flagged' with the reason; the copy's own bandwidth last."""
    cases = [c for c in record["cases"] if c["op"] == op and c["dtype"] == dtype]
    names = []
    for case in cases:
        names += [r["name"] for r in case["results"] if r["name"] not in names]
    header = "| contender | " + " | ".join(
        "×".join(map(str, c["shape"])) + (" (graph)" if c["mode"] == "graph" else "") for c in cases) + " |"
    lines = [header, "|" + "---|" * (len(cases) + 1)]
    for name in names:
        cells = []
        for case in cases:
            r = next((r for r in case["results"] if r["name"] == name), None)
            cells.append(cell(r) if r else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    copies = " | ".join(f"{c['copy']['gbps']:.0f} GB/s (spread {c['copy']['spread']:.2f})" for c in cases)
    lines.append(f"| *copy (speed of light)* | {copies} |")
    return "\n".join(lines)
