"""Experiments on the real model: gradient flow at init, paired training runs, drift and norm statistics.

They test the lesson's claims (residuals keep gradients alive; Pre-LN trains more stably than Post-LN)
and reproduce the trend Xiong et al. 2020 proved ("On Layer Normalization in the Transformer Architecture").
"""

from __future__ import annotations

from modelcore.experiments.activations import norm_statistics, representation_drift
from modelcore.experiments.catalog import KINDS, canonical_params, run_experiment
from modelcore.experiments.compare import SWITCHES, arms_of, compare_runs
from modelcore.experiments.gradients import gradient_norms_at_init, layer_grad_norms, series
from modelcore.experiments.runs import RunConfig, build_probe, train_probe
from modelcore.experiments.threads import torch_threads

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
]
