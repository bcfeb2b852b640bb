"""Experiments on the real model: gradient flow at init, paired training runs, drift and norm statistics.

They test the lesson's claims (residuals keep gradients alive; Pre-LN trains more stably than Post-LN)
and reproduce the trend Xiong et al. 2020 proved ("On Layer Normalization in the Transformer Architecture").

The names below load on first use (modelcore._lazy): the web process reads the settings and kinds
(`modelcore.experiments.spec`) without loading torch; the workers that run experiments load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelcore._lazy import lazy_exports

if TYPE_CHECKING:
    from modelcore.experiments.activations import norm_statistics, representation_drift
    from modelcore.experiments.catalog import run_experiment
    from modelcore.experiments.compare import compare_runs
    from modelcore.experiments.gradients import gradient_norms_at_init, layer_grad_norms, series
    from modelcore.experiments.runs import build_probe, train_probe
    from modelcore.experiments.spec import KINDS, SWITCHES, RunConfig, arms_of, canonical_params
    from modelcore.experiments.sweep import train_stacked
    from modelcore.experiments.threads import torch_threads

_EXPORTS = {
    "norm_statistics": "modelcore.experiments.activations",
    "representation_drift": "modelcore.experiments.activations",
    "run_experiment": "modelcore.experiments.catalog",
    "compare_runs": "modelcore.experiments.compare",
    "gradient_norms_at_init": "modelcore.experiments.gradients",
    "layer_grad_norms": "modelcore.experiments.gradients",
    "series": "modelcore.experiments.gradients",
    "build_probe": "modelcore.experiments.runs",
    "train_probe": "modelcore.experiments.runs",
    "KINDS": "modelcore.experiments.spec",
    "SWITCHES": "modelcore.experiments.spec",
    "RunConfig": "modelcore.experiments.spec",
    "arms_of": "modelcore.experiments.spec",
    "canonical_params": "modelcore.experiments.spec",
    "torch_threads": "modelcore.experiments.threads",
    "train_stacked": "modelcore.experiments.sweep",
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = [
    "KINDS",
    "SWITCHES",
    "RunConfig",
    "arms_of",
    "build_probe",
    "canonical_params",
    "compare_runs",
    "gradient_norms_at_init",
    "layer_grad_norms",
    "norm_statistics",
    "representation_drift",
    "run_experiment",
    "series",
    "torch_threads",
    "train_probe",
    "train_stacked",
]
