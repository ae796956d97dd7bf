"""Figures from results records: the ladder (% of speed of light per stage) and
bandwidth against row length. Each returns a matplotlib Figure of fixed size."""

from __future__ import annotations

import matplotlib.pyplot as plt

from .results import device_line, find_case


def ladder(record: dict, cols: int, mode: str = "eager+flush"):
    """Horizontal bars: % of the copy's bandwidth for every contender at one shape."""
    case = find_case(record, cols, mode)
    names = [r["name"] for r in case["results"]]
    pct = [r["pct_sol"] for r in case["results"]]
    colors = ["tab:gray" if n.startswith("torch") else "tab:blue" for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 1.2))
    ax.barh(names[::-1], pct[::-1], color=colors[::-1])
    for y, (p, r) in enumerate(zip(pct[::-1], case["results"][::-1])):
        ax.text(p + 1, y, f"{p:.0f}%  {r['gbps']:.0f} GB/s", va="center", fontsize=8)
    ax.axvline(100, color="black", lw=1, ls="--")
    ax.set_xlim(0, 125)
    ax.set_xlabel(f"% of copy bandwidth ({case['copy']['gbps']:.0f} GB/s, same bytes, same run)")
    ax.set_title(f"RMSNorm {case['rows']}×{case['cols']} fp32 — {device_line(record)}", fontsize=9)
    fig.tight_layout()
    return fig


def bandwidth_vs_cols(record: dict, mode: str = "eager+flush"):
    """GB/s against row length for every contender, with the copy as a dashed line."""
    cases = sorted((c for c in record["cases"] if c["mode"] == mode), key=lambda c: c["cols"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    cols = [c["cols"] for c in cases]
    ax.plot(cols, [c["copy"]["gbps"] for c in cases], "k--", label="copy (speed of light)")
    for name in [r["name"] for r in cases[0]["results"]]:
        gbps = [next(r["gbps"] for r in c["results"] if r["name"] == name) for c in cases]
        style = ":" if name.startswith("torch") else "-"
        ax.plot(cols, gbps, style, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(cols, [str(c) for c in cols])
    ax.set_xlabel("row length (floats), about 256 MiB moved per case")
    ax.set_ylabel("GB/s (bytes read + written)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(device_line(record), fontsize=9)
    fig.tight_layout()
    return fig
