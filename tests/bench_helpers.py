"""Test-only fit methods for tests/test_bench.py (imported by bench runs through ``imports = [...]``).

``test-sleep`` sleeps ``seconds`` (to exceed a run's hard limit), ``test-raise`` raises, ``test-crash``
kills its own process without a result.
"""
import os
import time

import numpy as np

from milopt.estimators.base import MILClassifier
from milopt.estimators.registry import register_method


class SleepClassifier(MILClassifier):
    def __init__(self, seconds=0.0):
        self.seconds = seconds

    def _fit(self, bags):
        time.sleep(self.seconds)
        self.fit_info_ = {"objective": float(self.seconds), "termination": "optimal", "iterations": 1}
        return self

    def predict_instances(self, bags):
        bags = self._check_input(bags)
        return bags.X[:, 0] - np.median(bags.X[:, 0])


class RaiseClassifier(SleepClassifier):
    def _fit(self, bags):
        raise RuntimeError("deliberate failure inside the test method")


class CrashClassifier(SleepClassifier):
    def _fit(self, bags):
        os._exit(3)


register_method("test-sleep", SleepClassifier, doc="test only: sleeps")
register_method("test-raise", RaiseClassifier, doc="test only: raises")
register_method("test-crash", CrashClassifier, doc="test only: exits the process")
