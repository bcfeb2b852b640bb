"""One experiment run: its parameters (unique by hash), progress and stored result."""
from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext, ngettext, pgettext
from django.utils.translation import gettext_lazy as _

from modelcore.experiments.comparisons import comparison_arms
from modelcore.experiments.spec import KINDS, SWEEP_ONLY, SWITCHES, RunConfig
from webapp.ops.jobs import JobStatus, Run
from webapp.site_pages.figure_style import label_text

# What each kind of run is called on the pages (modelcore names them in code).
KIND_LABELS = {"gradflow": _("gradients at initialisation"), "compare": _("paired training runs"),
               "drift": _("representation drift"), "norms": _("norm statistics"),
               "sweep": _("paired training runs, several seeds")}
# The arms each kind compares, as modelcore labels them (a compare run's come from its switch).
KIND_ARMS = {"drift": ("residual", "no residual"), "norms": ("layernorm", "rmsnorm")}


class ExperimentRun(Run):
    """A run of one experiment kind; asking for the same parameters again finds this row."""

    # How the experiment pages word a status (the training pages use the words themselves).
    STATUS_LABELS = {JobStatus.QUEUED: _("Queued"), JobStatus.RUNNING: _("Running"), JobStatus.SUCCEEDED: _("Done"),
                     JobStatus.FAILED: _("Failed"), JobStatus.CANCELLED: _("cancelled")}

    kind = models.CharField(max_length=20, choices=[(k, KIND_LABELS.get(k, k)) for k in KINDS])
    params = models.JSONField(help_text="Canonical parameters: every value the result depends on.")
    params_key = models.CharField(max_length=64, unique=True, help_text="sha256 of kind + canonical parameters.")
    shipped = models.BooleanField(default=False, help_text="Copied from the results that ship with the app.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "created_at"])]
        verbose_name = _("experiment run")
        verbose_name_plural = _("experiment runs")

    def __str__(self) -> str:
        return self.display_name()

    def display_name(self) -> str:
        """What the run compares, in the reader's language: "paired training runs: Post-LN against Pre-LN, 6 layers, seed 0"."""
        params = self.params or {}
        parts = [self._arms_text(params)]
        if "layers" in params and params.get("switch") != "depth":  # the depths sweep: its arms say them
            parts.append(ngettext("%(n)s layer", "%(n)s layers", params["layers"]) % {"n": params["layers"]})
        if "seed" in params:
            first, seeds = params["seed"], params.get("seeds", 1)
            parts.append(gettext("seed %(seed)s") % {"seed": first} if seeds == 1
                         else gettext("seeds %(first)s–%(last)s") % {"first": first, "last": first + seeds - 1})
        what = pgettext("list separator", ", ").join(part for part in parts if part)
        kind = str(self.get_kind_display())
        return gettext("%(kind)s: %(what)s") % {"kind": kind, "what": what} if what else kind

    def _arms_text(self, params: dict[str, Any]) -> str:
        """"Post-LN against Pre-LN" for the arms compared; the one setting measured for a gradient run."""
        if self.kind == "gradflow":
            return label_text(params.get("norm_position", ""))
        switch = params.get("switch")
        if self.kind in ("compare", "sweep") and switch in SWITCHES:
            arms = tuple(label for label, _ in SWITCHES[switch](RunConfig()))  # the labels, whatever the settings
        elif self.kind == "sweep" and switch in SWEEP_ONLY:  # the lesson's mask and FFN widths, the depths
            arms = tuple(arm.label for arm in comparison_arms(switch))
        else:
            arms = KIND_ARMS.get(self.kind, ())
        if len(arms) < 2:
            return ""
        shown = [label_text(arm) for arm in arms]
        return gettext("%(first)s against %(second)s") % {
            "first": pgettext("list separator", ", ").join(shown[:-1]), "second": shown[-1]}

    @property
    def status_label(self) -> str:
        return str(self.STATUS_LABELS[self.status])
