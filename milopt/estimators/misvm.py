"""MI-SVM estimator solved exactly as a mixed-integer program (``milopt fit misvm-miqp``)."""
from __future__ import annotations

from milopt.estimators.formulation import FormulationClassifier, formulation_params
from milopt.estimators.registry import register_method
from milopt.numerics import misvm_objective, sil_start
from milopt.params import Choice, Int, Str

__all__ = ["MISVMClassifier", "sil_start"]


class MISVMClassifier(FormulationClassifier):
    """MI-SVM (one witness per positive bag; Andrews et al. 2002) as Kent & Yu's MIQP (eq. 5).

    The formulation ``misvm-bigm`` (:mod:`milopt.models.misvm_bigm`) built on the training
    bags, started from a single-instance linear SVM (whose objective also tightens the valid
    big-M), solved by the driver and decoded; when the solver stops without a solution the
    start is kept.

    Parameters
    ----------
    C : float
        Bag slack cost.
    method : {'miqp'}
        ``miqp``: the ``misvm_bigm`` model through the solver driver.
    solver : str
        Backend name (must handle the problem class: MIQP for ``norm='l2'``, MILP for ``'l1'``;
        ``scip`` by default).
    time_limit : float
        Seconds per solve; the incumbent is used when it is hit.
    mip_gap : float, optional
    class_weight : {'kent-yu', 'balanced', 'none'}
    big_m : 'valid' | 'mildsvm' | float
    norm : {'l2', 'l1'}
        Regulariser ½‖w‖² (MIQP) or ‖w‖₁ (MILP).
    disjunction : {'bigm', 'sos1', 'indicator'}
        How a non-witness instance is released (``indicator`` needs ``solver='scip-native'``).
    warm_start : bool
        Start from a linear SVM on instances (also tightens the valid big-M with its objective).
    threads : int, optional
    random_state : int
    """

    _formulation = "misvm-bigm"
    # the formulation's declarations of its keys, plus the solver settings and these
    param_spec = formulation_params(
        ("C", "class_weight", "big_m", "norm", "disjunction"),
        method=Choice("miqp", ("miqp",), "miqp: the misvm-bigm model through the solver driver"),
        solver=Str("scip", "backend (must handle MIQP for norm=l2, MILP for norm=l1)"),
        random_state=Int(0, "seed of the starting SVM", none=True),
    )

    def __init__(self, C=1.0, method="miqp", solver="scip", time_limit=60.0, mip_gap=None, class_weight="kent-yu",
                 big_m="valid", warm_start=True, threads=None, random_state=0, norm="l2", disjunction="bigm",
                 threshold="auto"):
        self.C = C
        self.method = method
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.class_weight = class_weight
        self.big_m = big_m
        self.warm_start = warm_start
        self.threads = threads
        self.random_state = random_state
        self.norm = norm
        self.disjunction = disjunction
        self.threshold = threshold

    def _model_params(self) -> dict:
        return {"C": self.C, "class_weight": self.class_weight, "big_m": self.big_m, "norm": self.norm,
                "disjunction": self.disjunction}

    def _start(self, bags, typed):
        start = sil_start(bags, C=float(self.C), random_state=self.random_state)
        ub = misvm_objective(bags, start[0], start[1], self.C, self.class_weight, norm=typed.get("norm", "l2"))
        return start, {"upper_bound": ub}

    def _fallback(self, point):
        if point is None:
            return None
        return {"w": point[0], "b": point[1], "witnesses": {}}

    def _fit(self, bags):
        super()._fit(bags)
        self.witnesses_ = self.solution_.get("witnesses", {})
        return self


register_method("misvm-miqp", MISVMClassifier, fixed={"method": "miqp"},
                doc="MI-SVM as Kent & Yu's big-M MIQP (misvm_bigm) through the solver driver")
