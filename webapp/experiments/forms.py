"""The launch form: a comparison or a gradient measurement, within the bounds of the user's role."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.validators import MaxValueValidator
from django.utils.translation import gettext_lazy as _

from modelcore.config import model_overrides
from modelcore.experiments.spec import PROBE_KNOBS, PROBE_TASKS, SWEEP_SEEDS
from webapp.site_pages.model_forms import check_model, model_choice_field

N_HEADS = 4  # fixed: the form asks for d_model only, d_ff is 4 * d_model as in the paper


@dataclass(frozen=True)
class Limits:
    """The largest run a role may launch."""

    layers: int
    d_model: int
    steps: int
    batch_size: int
    seeds: int


STUDENT_LIMITS = Limits(layers=6, d_model=128, steps=300, batch_size=64, seeds=3)
ADMIN_LIMITS = Limits(layers=48, d_model=1024, steps=20_000, batch_size=512, seeds=10)

SWITCH_LABELS = {
    "norm_position": _("Norm position: Post-LN against Pre-LN"),
    "residual": _("Residual connections: on against off"),
    "warmup": _("Learning-rate warmup: on against off"),
    "norm": _("Normalisation: LayerNorm against RMSNorm"),
}


class LaunchForm(forms.Form):
    experiment = forms.ChoiceField(
        label=_("Experiment"),
        choices=[("compare", _("Paired training runs")), ("gradflow", _("Gradient norms at initialisation"))],
    )
    switch = forms.ChoiceField(label=_("What differs between the two runs"), choices=list(SWITCH_LABELS.items()))
    task = forms.ChoiceField(label=_("Task"), choices=[(t, t) for t in PROBE_TASKS], initial="reverse")
    layers = forms.IntegerField(label=_("Layers (encoder and decoder each)"), min_value=1, initial=6)
    d_model = forms.IntegerField(label=_("d_model"), min_value=8, initial=64)
    steps = forms.IntegerField(label=_("Training steps"), min_value=10, initial=300)
    batch_size = forms.IntegerField(label=_("Batch size"), min_value=1, initial=32)
    lr = forms.FloatField(label=_("Learning rate (peak)"), min_value=1e-5, max_value=0.1, initial=3e-3)
    warmup_steps = forms.IntegerField(label=_("Warmup steps (0: none)"), min_value=0, initial=0)
    norm_position = model_choice_field("norm_position", label=_("Norm position"),
                                       labels={"post": "Post-LN", "pre": "Pre-LN"})
    norm = model_choice_field("norm", label=_("Norm"), labels={"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"})
    residual = forms.BooleanField(label=_("Residual connections"), required=False, initial=True)
    seeds = forms.IntegerField(label=_("Seeds to average (gradient norms)"), min_value=1, initial=3)
    # Paired runs: one seed, or a sweep of several trained together (each seed its own initial weights and batches).
    sweep_seeds = forms.TypedChoiceField(
        label=_("Seeds per arm (paired runs)"), coerce=int, initial=1, required=False, empty_value=1,
        choices=[(1, "1"), *((n, str(n)) for n in SWEEP_SEEDS)],
    )
    seed = forms.IntegerField(label=_("Seed"), min_value=0, max_value=1_000_000, initial=0)

    def __init__(self, *args: Any, limits: Limits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        for name in ("layers", "d_model", "steps", "batch_size", "seeds"):
            field = self.fields[name]
            field.max_value = getattr(limits, name)
            field.validators.append(MaxValueValidator(field.max_value))
            field.widget.attrs["max"] = field.max_value

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not any(name in self.errors for name in PROBE_KNOBS):
            words = {"heads": _("d_model must be a multiple of %(n)d (the number of heads).") % {"n": N_HEADS}}
            check_model(self, model_overrides(**self._knobs()), words=words, place={"n_heads": "d_model"})
        steps, warmup = data.get("steps"), data.get("warmup_steps")
        if steps is not None and warmup is not None and warmup > steps:
            self.add_error("warmup_steps", _("Warmup cannot be longer than the run."))
        return data

    def experiment_request(self) -> tuple[str, dict[str, Any]]:
        """(kind, params) for a valid form."""
        data = self.cleaned_data
        model = {**self._knobs(), "seed": data["seed"]}
        if data["experiment"] == "gradflow":
            return "gradflow", {**model, "seeds": data["seeds"]}
        run = {"task": data["task"], "steps": data["steps"], "batch_size": data["batch_size"], "lr": data["lr"],
               "warmup_steps": data["warmup_steps"], "switch": data["switch"]}
        if data["sweep_seeds"] > 1:  # seeds seed .. seed + n - 1 of each arm, trained stacked
            return "sweep", {**model, **run, "seeds": data["sweep_seeds"]}
        return "compare", {**model, **run}

    def _knobs(self) -> dict[str, Any]:
        """The model's knobs as RunConfig names them; heads and FFN width are fixed by d_model."""
        data = self.cleaned_data
        fixed = {"n_heads": N_HEADS, "d_ff": 4 * data["d_model"]}
        return {name: fixed[name] if name in fixed else data[name] for name in PROBE_KNOBS}
