"""Figures of ``milopt report``: performance profiles, final gaps, gaps over time (PNG, Agg).

Readable with many contenders: each contender has its own colour (a 20-colour cycle), marker
(11) and line style (4), labels are wrapped, legends sit outside the plotting area, and the
figures use matplotlib's constrained layout (no ``tight_layout``, which warns and gives up when
labels are long).
"""
from __future__ import annotations

import pandas as pd

from milopt.bench.report_tables import _trajectory, capped_gaps, performance_profile

def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


LINESTYLES = ["-", "--", "-.", ":"]
MARKERS = ["o", "s", "^", "v", "D", "x", "+", "*", "P", "h", "<"]  # 11: coprime with the 4 line styles
#: 20 colours: matplotlib's tab10, then ColorBrewer Dark2, black and a purple (matplotlib's
#: default cycle has ten, so an eleventh contender would repeat the first one's colour)
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#000000",
           "#6a3d9a", "#b15928"]
#: width (characters) at which contender labels, problem names and titles are wrapped
LABEL_WIDTH = 30


def contender_style(k: int) -> dict:
    """Colour, line style and marker of the k-th contender: 20 colours x 4 line styles x 11
    markers, so that more than ten contenders stay apart (by marker and line style also in grey)."""
    return {"color": COLOURS[k % len(COLOURS)], "linestyle": LINESTYLES[k % len(LINESTYLES)],
            "marker": MARKERS[k % len(MARKERS)]}


def wrap_label(text, width: int = LABEL_WIDTH) -> str:
    """``text`` on lines of at most ``width`` characters, broken after ``. - _ / ? & , =`` or a
    space (instance names have no spaces), a longer piece cut where it must."""
    import re

    pieces = []
    for part in re.split(r"(?<=[.\-_/?&,= ])", str(text)):
        while len(part) > width:
            pieces.append(part[:width])
            part = part[width:]
        if part:
            pieces.append(part)
    lines, cur = [], ""
    for p in pieces:
        if cur and len(cur) + len(p) > width:
            lines.append(cur.rstrip())
            cur = p
        else:
            cur += p
    if cur:
        lines.append(cur.rstrip())
    return "\n".join(lines)


def _legend_size(labels, fontsize: float = 7.0) -> tuple[float, float, int]:
    """(width, height) in inches a one- or two-column legend of ``labels`` needs, and its columns."""
    lines = [len(ln) for lab in labels for ln in str(lab).split("\n")] or [0]
    n_lines = sum(str(lab).count("\n") + 1 for lab in labels)
    ncol = 1 if n_lines <= 28 else 2
    char_w = 0.55 * fontsize / 72  # inches per character, roughly
    width = ncol * (max(lines) * char_w + 0.75)
    height = (n_lines / ncol) * fontsize * 1.45 / 72 + 0.4
    return width, height, ncol


def _legend(fig, handles, labels, ncol: int) -> None:
    fig.legend(handles, labels, loc="outside right upper", fontsize=7, ncol=ncol, handlelength=3.2,
               frameon=False)


def plot_profile(times: pd.DataFrame, path, title: str, labels: dict | None = None) -> None:
    """Dolan-Moré performance profile (:func:`milopt.bench.report_tables.performance_profile`),
    one step line per contender, tau on a log2 axis, the legend outside on the right."""
    plt = _plt()
    taus, prof = performance_profile(times)
    labs = [wrap_label((labels or {}).get(c, c)) for c in prof.columns]
    lw, lh, ncol = _legend_size(labs)
    fig = plt.figure(figsize=(5.6 + lw, max(4.2, lh)), layout="constrained")
    ax = fig.add_subplot()
    for k, c in enumerate(prof.columns):
        st = contender_style(k)
        ax.step(taus, prof[c].to_numpy(), where="post", label=labs[k], color=st["color"], linestyle=st["linestyle"],
                marker=st["marker"], markevery=max(1, len(taus) // 12), markersize=5, linewidth=1.3,
                markerfacecolor="none")
    ax.set_xscale("log", base=2)
    ax.set_xlim(1, max(taus[-1], 2))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"$\tau$ (time ratio to the fastest)")
    ax.set_ylabel(r"fraction of problems with ratio $\leq \tau$")
    ax.set_title(wrap_label(f"{title} ({len(times)} problems)", 60), fontsize=9)
    ax.grid(True, alpha=0.3)
    _legend(fig, *ax.get_legend_handles_labels(), ncol)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_gaps(df: pd.DataFrame, path) -> bool:
    """Final relative gap (%, symlog) of every solve: one row per problem (names wrapped, read
    horizontally), one marker per contender, a black cross at 100 % for a run without a solution."""
    d = df[(df["kind"] == "solve") & (df["outcome"] != "unsupported")].copy()
    if d.empty:
        return False
    plt = _plt()
    d["_gap"] = capped_gaps(d) * 100
    problems = sorted(d["problem"].unique())
    y = {p: i for i, p in enumerate(problems)}
    conts = sorted(d["contender"].unique())
    n = len(conts)
    labs = [wrap_label(c) for c in conts] + ["no solution"]
    lw, lh, ncol = _legend_size(labs)
    names = [wrap_label(p, 36) for p in problems]
    name_w = max(len(ln) for nm in names for ln in nm.split("\n")) * 0.55 * 7 / 72
    row_h = max(0.3, 0.12 * max(nm.count("\n") + 1 for nm in names), 0.035 * n)
    fig = plt.figure(figsize=(4.8 + name_w + lw, max(3.2, lh, 1.3 + row_h * len(problems))), layout="constrained")
    ax = fig.add_subplot()
    spread = 0.76 / max(n - 1, 1)
    handles = []
    for j, c in enumerate(conts):
        g = d[d["contender"] == c]
        st = contender_style(j)
        nosol = (~((g["outcome"] == "ok") & g["objective"].notna())).to_numpy()
        ys = g["problem"].map(y).to_numpy() + (j - (n - 1) / 2) * spread
        gap = g["_gap"].to_numpy()
        handles.append(ax.scatter(gap[~nosol], ys[~nosol], s=26, color=st["color"], marker=st["marker"],
                                  label=labs[j]))
        if nosol.any():
            ax.scatter(gap[nosol], ys[nosol], marker="x", color="k", s=26, linewidths=1.0)
    handles.append(plt.Line2D([], [], color="k", marker="x", linestyle="none"))
    ax.set_yticks(range(len(problems)))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_ylim(len(problems) - 0.5, -0.5)
    ax.set_xscale("symlog", linthresh=0.01)
    ax.set_xlim(-0.001, 150)
    ax.set_xlabel("final relative gap (%)")
    ax.set_title(wrap_label("final relative gap per problem (x: no solution, drawn at 100 %)", 60), fontsize=9)
    ax.grid(True, alpha=0.3)
    _legend(fig, handles, labs, ncol)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_gap_over_time(df: pd.DataFrame, refs: dict, path, max_panels: int = 16) -> bool:
    """Per integer problem (one panel each, at most ``max_panels``): primal gap to the best known
    value (solid; its area up to the horizon is the primal integral) and, where the trajectory
    has the dual bound, the primal-dual gap (dashed) over the solver's clock, every contender in
    its colour and marker; one legend outside."""
    from milopt.bench.assess import primal_gap

    d = df[(df["kind"] == "solve") & df["problem_class"].astype(str).str.startswith("MI")]
    d = d[[bool(_trajectory(r)) for _, r in d.iterrows()]] if len(d) else d
    if d.empty:
        return False
    plt = _plt()
    all_probs = sorted(d["problem"].unique())
    probs = all_probs[:max_panels]
    k = len(probs)
    ncol = min(3, k)
    nrow = (k + ncol - 1) // ncol
    conts = sorted(d["contender"].unique())
    labs = [wrap_label(c) for c in conts] + ["primal gap (solid)", "primal-dual gap (dashed)"]
    dashed = False
    lw, lh, lcol = _legend_size(labs)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol + lw, max(lh, 2.9 * nrow + 0.8)), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, p in zip(axes.ravel(), probs):
        g = d[d["problem"] == p]
        ref = refs.get(g["instance"].iloc[0])
        t_lo, t_hi = float("inf"), 0.0
        for _, r in g.iterrows():
            tr = _trajectory(r)
            st = contender_style(conts.index(r["contender"]))
            horizon = float(r["time_limit"]) if pd.notna(r.get("time_limit")) else float(tr[-1][0])
            ts = [max(float(t), 1e-2) for t, _, _ in tr]
            pg = [primal_gap(pr, ref[0] if ref else None) * 100 for _, _, pr in tr]
            dg = [100.0 if pr is None or du is None else
                  min(100.0, 100 * abs(pr - du) / max(abs(pr), abs(du), 1e-10)) for _, du, pr in tr]
            if horizon > ts[-1]:  # the last incumbent is held to the horizon (as in the primal integral)
                ts, pg, dg = ts + [horizon], pg + [pg[-1]], dg + [dg[-1]]
            t_lo, t_hi = min(t_lo, ts[0]), max(t_hi, ts[-1])
            ax.step(ts, pg, where="post", color=st["color"], linestyle="-", marker=st["marker"],
                    markevery=max(1, len(ts) // 6), markersize=4, linewidth=1.2)
            if any(du is not None for _, du, _ in tr):  # a dual bound was recorded
                ax.step(ts, dg, where="post", color=st["color"], linestyle="--", linewidth=0.8)
                dashed = True
        ax.set_xscale("log")
        ax.set_xlim(t_lo / 1.5, max(t_hi * 1.1, t_lo * 2))
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_ylim(-0.001, 150)
        ax.set_title(wrap_label(p.split("#")[0], 40), fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(True, alpha=0.3)
    for ax in axes.ravel()[k:]:
        ax.axis("off")
    handles = [plt.Line2D([], [], **contender_style(j), markersize=4) for j in range(len(conts))]
    handles += [plt.Line2D([], [], color="k", linestyle="-"), plt.Line2D([], [], color="k", linestyle="--")]
    if not dashed:  # no solver recorded its dual bound over time
        handles, labs = handles[:-1], labs[:-1]
    _legend(fig, handles, labs, lcol)
    fig.supxlabel("seconds on the solver's clock (log)", fontsize=8)
    fig.supylabel("gap (%)", fontsize=8)
    more = f" (first {k} of {len(all_probs)} problems)" if len(all_probs) > k else ""
    what = " and primal-dual gap (dashed)" if dashed else ""
    fig.suptitle(wrap_label(f"integer problems: primal gap to the best known value (solid){what}{more}", 90),
                 fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
