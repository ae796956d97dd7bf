"""Figures from results records: the ladder (% of speed of light per contender at
one case) and bandwidth against row length or bytes moved. Flagged results are
drawn as flagged (hatched bar, hollow marker), never as plain numbers. Each
function returns a matplotlib Figure of fixed size."""

from __future__ import annotations

import matplotlib.pyplot as plt

from .results import device_line, find_case, ladders


def _peer(name: str) -> bool:
    return not name[:2].isdigit()  # stages are named "NN title"


def ladder(record: dict, cols: int | None = None, mode: str = "eager+flush", op: str | None = None,
           dtype: str | None = None, shape=None):
    """Horizontal bars: % of the copy's bandwidth for every contender at one case."""
    case = find_case(record, cols, mode, op, dtype, shape)
    rs = case["results"][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rs) + 1.4))
    for y, r in enumerate(rs):
        if r["flagged"]:
            ax.barh(y, 100, color="none", edgecolor="tab:red", hatch="//")
            ax.text(2, y, f"flagged: {r['flag']}", va="center", fontsize=8, color="tab:red")
        else:
            ax.barh(y, r["pct_sol"], color="tab:gray" if _peer(r["name"]) else "tab:blue")
            ax.text(r["pct_sol"] + 1, y, f"{r['pct_sol']:.0f}%  {r['gbps']:.0f} GB/s  ±{r['spread']:.2f}",
                    va="center", fontsize=8)
    ax.set_yticks(range(len(rs)), [r["name"] for r in rs])
    ax.axvline(100, color="black", lw=1, ls="--")
    ax.set_xlim(0, 130)
    ax.set_xlabel(f"% of copy bandwidth ({case['copy']['gbps']:.0f} GB/s, copying its input, same rounds)")
    shape_txt = "×".join(map(str, case["shape"]))
    ax.set_title(f"{case['op']} {shape_txt} {case['dtype']} — {device_line(record)}", fontsize=9)
    fig.tight_layout()
    return fig


def bandwidth(record: dict, op: str | None = None, dtype: str | None = None, mode: str = "eager+flush"):
    """GB/s of every contender across the cases of one op and dtype (the record's
    first by default), against row length where it varies, else bytes moved; the
    copy of its input as a dashed line."""
    op, dtype = (op, dtype) if op and dtype else ladders(record)[0]
    cases = [c for c in record["cases"] if c["op"] == op and c["dtype"] == dtype and c["mode"] == mode]
    by_cols = len({c["cols"] for c in cases}) > 1
    key = (lambda c: c["cols"]) if by_cols else (lambda c: c["bytes"] / 2**20)
    cases.sort(key=key)
    xs = [key(c) for c in cases]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(xs, [c["copy"]["gbps"] for c in cases], "k--", label="copy (speed of light)")
    names = []
    for c in cases:
        names += [r["name"] for r in c["results"] if r["name"] not in names]
    any_flagged = False
    for name in names:
        pts = [(key(c), r) for c in cases for r in c["results"] if r["name"] == name]
        good = [(x, r["gbps"]) for x, r in pts if not r["flagged"]]
        line, = ax.plot([x for x, _ in good], [g for _, g in good], ":" if _peer(name) else "-", marker="o",
                        label=name)
        bad = [(x, r["gbps"]) for x, r in pts if r["flagged"]]
        if bad:
            any_flagged = True
            ax.plot([x for x, _ in bad], [g for _, g in bad], "x", color=line.get_color(), ms=10)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.set_xlabel("row length" if by_cols else "MiB moved")
    ax.set_ylabel("GB/s (bytes read + written)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="lower right")
    note = " (× = flagged, not a measurement)" if any_flagged else ""
    ax.set_title(f"{op} {dtype} — {device_line(record)}{note}", fontsize=9)
    fig.tight_layout()
    return fig


def bandwidth_vs_cols(record: dict, mode: str = "eager+flush", op: str | None = None, dtype: str | None = None):
    return bandwidth(record, op, dtype, mode)
