"""scripts/eval-noise as a module (its name has no .py), for the evaluations that reuse its
calibration, neighbour, compare and summary helpers (scripts/eval-budget,
scripts/eval-estimator)."""
import importlib.machinery
import importlib.util
import os


def eval_noise():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval-noise")
    loader = importlib.machinery.SourceFileLoader("eval_noise", path)
    spec = importlib.util.spec_from_loader("eval_noise", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
