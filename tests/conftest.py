import os

os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_configure(config):
    """Refuse to collect with one line when the project is not installed (instead of one
    ImportError per test module)."""
    import importlib.util

    import pytest

    missing = [m for m in ("milopt", "numpy", "scipy", "pandas", "sklearn", "pyomo", "highspy", "pyscipopt",
                           "hypothesis") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.exit(f"milopt's dependencies are not installed in this Python ({', '.join(missing)} missing): "
                    'run  python3 -m pip install -e ".[test]"  first (the README\'s test command does both)',
                    returncode=4)

