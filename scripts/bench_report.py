#!/usr/bin/env python3
"""Chart of each buffer policy's cost relative to `plain`, benchmark by benchmark.

Input: the results.json that `ibdkit bench --report DIR` (or `--json FILE`) writes. Output: a PNG
with one panel per benchmark, one bar per policy (median of the per-epoch ratios to plain, whiskers
= min..max over epochs), and, where Bitcoin Core PR #30987 published the same comparison, the
published ratio drawn beside ours (hatched bars).

    python scripts/bench_report.py --json DIR/results.json --out DIR/policy_cost.png

Needs matplotlib: `scripts/pydeps.sh --report` prints a python that has it.
"""
import argparse
import json
import math
import sys

# Replaced by the results' "policies" (the binary's policy list, without plain) when present.
POLICIES = ["zero-after-free", "barrier-only", "secure", "hardened"]
COLORS = {
    "zero-after-free": "#d62728",
    "barrier-only": "#ff7f0e",
    "secure": "#9467bd",
    "hardened": "#2ca02c",
}
EXTRA_COLORS = ["#1f77b4", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

# Bitcoin Core PR #30987, comment by the author on 2024-10-10: a 1000-byte CScript serialized into a
# DataStream. Throughput on master (zero_after_free_allocator), on a branch keeping only the
# compiler barrier ("partial zero-after-free") and on the PR branch (std::allocator = plain):
#   Ryzen 9 7900X:        4.58 GB/s master, 4.72 GB/s barrier-only, 23.33 GB/s PR branch
#   Raspberry Pi 5 (4GB): 5.42 GB/s master, 6.95 GB/s barrier-only,  7.03 GB/s PR branch
# Cost relative to plain = plain throughput / policy throughput.
PUBLISHED = {
    "DataStreamSerializeScript": {
        "zero-after-free": [("PR #30987, Ryzen 9 7900X", 23.33 / 4.58), ("PR #30987, Raspberry Pi 5", 7.03 / 5.42)],
        "barrier-only": [("PR #30987, Ryzen 9 7900X", 23.33 / 4.72), ("PR #30987, Raspberry Pi 5", 7.03 / 6.95)],
    },
}
PUBLISHED_HATCH = {"PR #30987, Ryzen 9 7900X": "///", "PR #30987, Raspberry Pi 5": "..."}


def load(path):
    with open(path) as f:
        data = json.load(f)
    listed = [p for p in data.get("policies", []) if p != "plain"]
    if listed:
        POLICIES[:] = listed
        for i, p in enumerate(p for p in listed if p not in COLORS):
            COLORS[p] = EXTRA_COLORS[i % len(EXTRA_COLORS)]
    groups = {}
    order = []
    for b in data.get("benchmarks", []):
        g = b["group"]
        if g not in groups:
            groups[g] = {}
            order.append(g)
        groups[g][b["variant"]] = b
    return data.get("environment", {}), order, groups


# The seed's six first, in its order; then the rest as registered.
SEED_ORDER = ["DataStreamAlloc", "DataStreamSerializeScript", "CCoinsViewDBFlush", "ProcessMessageBlock",
              "DeserializeBlockTest", "DeserializeAndCheckBlockTest"]


def panels(order, groups):
    """Benchmarks that compare buffer policies against plain: (group, unit, bars)."""
    out = []
    order = [g for g in SEED_ORDER if g in order] + [g for g in order if g not in SEED_ORDER]
    for g in order:
        variants = groups[g]
        if "plain" not in variants or not any(p in variants for p in POLICIES):
            continue
        bars = []  # (label, ratio, lo, hi, color, hatch)
        for p in POLICIES:
            r = variants.get(p)
            if r is not None and r.get("ratio_to_plain") is not None:
                bars.append((p, r["ratio_to_plain"], r.get("ratio_min"), r.get("ratio_max"), COLORS[p], None))
            for label, ratio in PUBLISHED.get(g, {}).get(p, []):
                bars.append((f"{p} — {label}", ratio, None, None, COLORS[p], PUBLISHED_HATCH[label]))
        if bars:
            out.append((g, variants["plain"]["unit"], bars))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True, help="results.json from ibdkit bench --report/--json")
    ap.add_argument("--out", required=True, help="PNG to write")
    args = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    env, order, groups = load(args.json)
    rows = panels(order, groups)
    if not rows:
        print("bench_report: no benchmark with a plain variant and buffer policies in", args.json, file=sys.stderr)
        return 1
    instr = any(b.get("ir_per_unit") is not None for g in groups.values() for b in g.values())

    heights = [len(bars) for _, _, bars in rows]
    fig_h = 1.6 + 0.34 * sum(heights) + 0.45 * len(rows)
    fig, axes = plt.subplots(len(rows), 1, figsize=(11, fig_h), sharex=True,
                             gridspec_kw={"height_ratios": heights, "hspace": 0.55})
    if len(rows) == 1:
        axes = [axes]

    values = [x for _, _, bars in rows for b in bars for x in b[1:4] if x]
    xmin = min(0.5, min(values) / 1.3)
    xmax = max(2.0, max(values) * 1.6)

    for ax, (group, unit, bars) in zip(axes, rows):
        ys = list(range(len(bars)))[::-1]
        for y, (label, ratio, lo, hi, color, hatch) in zip(ys, bars):
            published = hatch is not None
            # Bars grow from plain (1×): right = costlier than plain, left = cheaper.
            ax.barh(y, ratio - 1.0, left=1.0, height=0.72, color=color if not published else "white",
                    edgecolor=color, hatch=hatch, linewidth=1.2, alpha=0.9)
            if lo is not None and hi is not None and not instr:
                ax.errorbar(ratio, y, xerr=[[ratio - lo], [hi - ratio]], fmt="none", ecolor="black",
                            elinewidth=1, capsize=3)
            text_x = max(1.0, ratio, hi if (hi and not instr) else 0) * 1.06
            ax.text(text_x, y, f"{ratio:.2f}×", va="center", ha="left", fontsize=9,
                    fontstyle="italic" if published else "normal")
        ax.set_yticks(ys)
        ax.set_yticklabels([b[0] for b in bars], fontsize=9)
        ax.axvline(1.0, color="black", linewidth=1.2, linestyle="--")
        ax.set_title(f"{group}  (unit: {unit})", fontsize=11, loc="left", fontweight="bold")
        ax.set_xscale("log")
        ax.set_xlim(xmin, xmax)
        ax.grid(axis="x", which="major", color="#dddddd", linewidth=0.8)
        ax.tick_params(axis="x", labelbottom=True, labelsize=9)
        ax.set_axisbelow(True)

    ticks = [t for t in (0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200) if xmin <= t <= xmax]
    for ax in axes:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    what = "instructions (callgrind Ir)" if instr else "time"
    axes[-1].set_xlabel(f"{what} relative to plain, log scale (dashed line = plain = 1×; lower is cheaper)", fontsize=10)

    legend = [Patch(facecolor=COLORS[p], edgecolor=COLORS[p], label=f"{p} (ibdkit, this machine)") for p in POLICIES]
    legend += [Patch(facecolor="white", edgecolor="#555555", hatch=h, label=f"{label}: master vs PR branch (published)")
               for label, h in PUBLISHED_HATCH.items()]
    fig.legend(handles=legend, loc="upper center", ncol=2 if len(legend) <= 6 else 3, fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.55 / fig_h))

    spread = "" if instr else "; whiskers = min–max of the per-epoch ratios"
    title = f"Cost of each buffer policy relative to plain ({what}, median of interleaved epochs{spread})"
    sub = ", ".join(x for x in (env.get("cpu"), env.get("compiler"), env.get("commit"), env.get("date_utc")) if x)
    fig.suptitle(title + ("\n" + sub if sub else ""), fontsize=11, y=1 - 0.12 / fig_h, va="top")
    fig.subplots_adjust(left=0.33, right=0.97, top=1 - 1.45 / fig_h, bottom=0.6 / fig_h)
    fig.savefig(args.out, dpi=110)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
