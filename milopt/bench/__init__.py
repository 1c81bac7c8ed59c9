"""Benchmark harness: ``milopt bench`` / ``milopt report`` / ``milopt export-library`` (docs/bench.md).

* :func:`run_bench` (``milopt.bench.harness``): TOML configuration -> isolated runs -> ``runs.csv``.
* :func:`write_report` (``milopt.bench.report``): shifted geometric means, Dolan-More profiles,
  gap plot, Markdown summary, ``.solu`` file.
* :func:`export_library` (``milopt.bench.library``): ``.mps.gz`` / ``.lp.gz`` instance library.

Imported lazily, so that ``milopt`` commands that do not benchmark do not pay for pandas.
"""

_LAZY = {"run_bench": "milopt.bench.harness", "write_report": "milopt.bench.report",
         "export_library": "milopt.bench.library", "load_config": "milopt.bench.config",
         "expand": "milopt.bench.plan", "load_runs": "milopt.bench.runs", "Run": "milopt.bench.config"}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'milopt.bench' has no attribute {name!r}")
