r"""Which benchmark results count as solved, and why the others do not.

A **solve** result is solved only when all of these hold (docs/library.md):

1. the run finished (outcome ``ok``) and the solver claimed optimality (termination
   ``optimal``, within the run's relative gap limit);
2. its answer was **verified** against the model (:mod:`milopt.bench.verify`: feasible within
   1e-6, objective recomputed); results imported without a ``.sol`` file are ``unchecked``
   and count only when their objective agrees with a best known value;
3. it did not **outlive its time limit**: build + solve seconds at most
   :math:`1.1\,T + 1` s for a limit :math:`T`;
4. its objective (recomputed) is not **worse than the best known value** -- the ``.solu``
   value or the best verified objective of any run in the table -- by more than the
   tolerance :math:`\varepsilon = g\,|v| + 10^{-6}\max(1, |v|)`, with :math:`g` the run's gap
   limit (:math:`10^{-4}` when unknown): a wrong "optimal".

**Flags** (listed, not failures): a minimisation bound above the incumbent (a maximisation
bound below it) by more than the tolerance; a bound that cuts off the best known solution;
an objective better than a recorded ``=opt=``.

A **fit** result is solved when it finished and its method reported no failure termination
(``converged``, ``early_stopped`` and an iteration limit leave a usable model and count as
solved; ``optimal`` only for exact methods with a proof).  The termination words are one
vocabulary for solvers and native algorithms (:class:`milopt.solvers.Termination`, table in
``docs/statuses.md``): only ``optimal`` certifies a solve.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

#: fit terminations that count as failures; every other word (optimal, converged, early_stopped,
#: iteration_limit, unknown) leaves a usable model (docs/statuses.md)
FIT_FAILURES = {"time_limit", "error", "interrupted", "infeasible", "unbounded", "infeasible_or_unbounded"}
OVERRUN_FACTOR = 1.10
OVERRUN_SLACK = 1.0
DEFAULT_GAP = 1e-4


def _f(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _extra(v) -> dict:
    if not isinstance(v, str) or not v.strip():
        return {}
    try:
        d = json.loads(v)
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def run_time(r) -> float | None:
    """Seconds the run took against its limit: build + solve (``extra.run_time``), else time + build."""
    ex = _extra(r.get("extra"))
    if _f(ex.get("run_time")) is not None:
        return _f(ex["run_time"])
    t = _f(r.get("time"))
    b = _f(r.get("build_seconds"))
    return None if t is None else t + (b or 0.0)


def tolerance(ref: float, gap_limit) -> float:
    g = _f(gap_limit)
    g = DEFAULT_GAP if g is None else g
    return g * abs(ref) + 1e-6 * max(1.0, abs(ref))


def reference_values(df: pd.DataFrame, solu: dict | None = None) -> dict:
    """Best known objective per instance: ``{instance: (value, kind, sense)}``, from the
    ``.solu`` (``{name: {"kind", "value", "bound"}}``) and the best verified objective in ``df``."""
    out = {}
    d = df[df["kind"] == "solve"] if "kind" in df else df
    for inst, g in d.groupby("instance", sort=False):
        sense = "maximize" if "sense" in g and (g["sense"] == "maximize").any() else "minimize"
        sgn = -1.0 if sense == "maximize" else 1.0
        cands = []
        ver = g[(g["outcome"] == "ok") & (g.get("verified", pd.Series("", index=g.index)) == "yes")]
        col = "objective_recomputed" if "objective_recomputed" in g else "objective"
        for v in ver[col].tolist():
            if _f(v) is not None:
                cands.append((_f(v), "verified run"))
        e = (solu or {}).get(inst)
        if e and e.get("kind") in ("opt", "best") and _f(e.get("value")) is not None:
            cands.append((_f(e["value"]), e["kind"]))
        if cands:
            v, kind = min(cands, key=lambda c: sgn * c[0])
            out[inst] = (v, kind, sense)
    for inst, e in (solu or {}).items():
        if inst not in out and e.get("kind") in ("opt", "best") and _f(e.get("value")) is not None:
            out[inst] = (_f(e["value"]), e["kind"], "minimize")
    return out


def assess(df: pd.DataFrame, solu: dict | None = None) -> pd.DataFrame:
    """``df`` with columns ``solved`` (bool), ``failure`` (why not solved) and ``flag``."""
    df = df.copy()
    refs = reference_values(df, solu) if "instance" in df else {}
    solved, failure, flag = [], [], []
    for _, r in df.iterrows():
        kind = r.get("kind", "solve")
        out = str(r.get("outcome", ""))
        term = str(r.get("termination", "") or "")
        if out == "unsupported":
            solved.append(False), failure.append(""), flag.append("")
            continue
        if kind == "fit":
            ok = out == "ok" and term not in FIT_FAILURES
            solved.append(ok)
            failure.append("" if ok else (out if out != "ok" else f"method stopped: {term}"))
            flag.append("")
            continue
        reasons, flags = [], []
        err = str(r.get("error", "") or "")
        if out != "ok":
            reasons.append(out + (f": {err[:160]}" if err else ""))
        elif term != "optimal":
            reasons.append(f"not solved ({term or 'no termination'})")
        ver = str(r.get("verified", "") or "")
        obj = _f(r.get("objective_recomputed")) if _f(r.get("objective_recomputed")) is not None \
            else _f(r.get("objective"))
        ref = refs.get(r.get("instance"))
        sgn = -1.0 if str(r.get("sense", "")) == "maximize" or (ref and ref[2] == "maximize") else 1.0
        if out == "ok" and term == "optimal":
            if ver == "no":
                reasons.append(f"answer not verified: {r.get('verify_note') or 'check failed'}")
            elif ver == "unchecked":
                if ref is None:
                    reasons.append("no .sol to verify and no best known value to compare with")
            elif ver != "yes":
                reasons.append("answer not verified (no solution check recorded)")
            rt, tl = run_time(r), _f(r.get("time_limit"))
            if rt is not None and tl is not None and rt > OVERRUN_FACTOR * tl + OVERRUN_SLACK:
                reasons.append(f"outlived its time limit: {rt:.1f} s on a {tl:g} s limit")
            if obj is not None and ref is not None:
                v, rk, _ = ref
                tol = tolerance(v, r.get("gap_limit"))
                if sgn * (obj - v) > tol:
                    src = {"opt": "the .solu optimum", "best": "the .solu best known value"}.get(rk, "a verified run")
                    reasons.append(f"wrong optimum: {obj:.10g}, {src} is {v:.10g}")
                elif ver == "unchecked" and sgn * (v - obj) > tol:
                    reasons.append(f"objective {obj:.10g} beats the best known value {v:.10g} and no .sol verifies it")
                elif rk == "opt" and sgn * (v - obj) > tol and ver == "yes":
                    flags.append(f"objective {obj:.10g} better than the recorded optimum {v:.10g}")
        b = _f(r.get("bound"))
        if b is not None and obj is not None and out == "ok":
            if sgn * (b - obj) > tolerance(obj, r.get("gap_limit")):
                flags.append(f"bound {b:.10g} {'above' if sgn > 0 else 'below'} the incumbent {obj:.10g}")
            elif ref is not None and sgn * (b - ref[0]) > tolerance(ref[0], r.get("gap_limit")):
                flags.append(f"bound {b:.10g} cuts off the best known solution {ref[0]:.10g}")
        solved.append(not reasons)
        failure.append("; ".join(reasons))
        flag.append("; ".join(flags))
    df["solved"] = np.asarray(solved, dtype=bool) if len(df) else pd.Series(dtype=bool)
    df["failure"] = failure
    df["flag"] = flag
    return df


def primal_gap(p, opt) -> float:
    r"""Primal gap of an incumbent value (Berthold 2013, Def. 1), capped at 1.

    .. math::

        \gamma(p) = \begin{cases} 1 & \text{no incumbent, or } p \cdot v^* < 0,\\
        0 & |p| = |v^*| = 0,\\
        \dfrac{|p - v^*|}{\max(|p|, |v^*|)} & \text{otherwise,} \end{cases}

    with :math:`v^*` the reference value (the optimum, or the best known value).  It does not
    depend on the objective sense and lies in [0, 1].
    """
    if p is None or opt is None:
        return 1.0
    if p * opt < 0:
        return 1.0
    den = max(abs(p), abs(opt))
    return 0.0 if den == 0 else min(1.0, abs(p - opt) / den)


def primal_integral(trajectory, opt, horizon: float) -> float | None:
    r"""Primal integral of a run up to ``horizon`` seconds (Berthold 2013, Defs. 2 and 3).

    The primal gap function :math:`p(t)` is 1 until the first incumbent and
    :math:`\gamma(\tilde x(t))` (:func:`primal_gap`) of the incumbent held at time :math:`t`
    afterwards, a step function that changes when an incumbent is found.  With the incumbents
    found at :math:`0 \le t_1 \le \dots \le t_k` and :math:`t_0 = 0`, :math:`t_{k+1} = T`,

    .. math::

        P(T) = \int_0^T p(t)\,dt = \sum_{i=1}^{k+1} p(t_{i-1})\,(t_i - t_{i-1}),

    so :math:`0 \le P(T) \le T` and :math:`P(T)/T` is the mean primal gap over the horizon.

    Parameters
    ----------
    trajectory : list of [t, dual, primal]
        The points **in the order the solver reported them** (``primal`` None before the first
        incumbent).  They are never sorted: a solver log prints its clock rounded (SCIP: 0.1 s),
        so several incumbents share a time and only their order says which was held afterwards
        (sorting by value would hold the worst one).  A point earlier than its predecessor (a
        garbled log line) counts at its predecessor's time.
    opt : float
        Reference value :math:`v^*` (optimum or best known value), in the model's sense.
    horizon : float
        :math:`T`, seconds; points after it are cut, the last incumbent is held up to it.

    Returns
    -------
    float or None
        None without a trajectory or a reference value.
    """
    if not trajectory or opt is None or horizon is None:
        return None
    horizon = float(horizon)
    total, t_prev, g_prev = 0.0, 0.0, 1.0
    for pt in trajectory:
        t, p = pt[0], pt[2]
        if t is None:
            continue
        t = min(max(float(t), t_prev), horizon)
        total += g_prev * (t - t_prev)
        t_prev = t
        g_prev = primal_gap(None if p is None else float(p), opt)
    total += g_prev * max(0.0, horizon - t_prev)
    return total
