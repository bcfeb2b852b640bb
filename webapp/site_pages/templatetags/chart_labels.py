"""The words the pages' scripts put on charts, in the reader's language (one JSON script in base.html)."""
from __future__ import annotations

from django import template
from django.utils.html import json_script
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from webapp.site_pages.figure_style import figure_style as style
from webapp.site_pages.figure_style import label_text
from webapp.site_pages.metrics import metric_name

register = template.Library()


@register.simple_tag
def chart_labels() -> SafeString:
    """<script id="chart-labels"> with each chart word the scripts use, keyed as the data names it."""
    arms = ("post", "pre", "residual", "no residual", "warmup", "no warmup", "layernorm", "rmsnorm")
    labels = {
        "step": _("step"), "loss": _("training loss"), "metric": _("metric"), "lr": _("learning rate"),
        **{key: metric_name(key) for key in ("exact_match", "token_accuracy")},
        "bleu": "BLEU / 100", "valid_loss": _("validation loss"),
        # The training job's validation chart: exact match and token accuracy are 0..1, BLEU drawn divided by 100.
        "score": _("score (0–1; BLEU ÷ 100)"), **{arm: label_text(arm) for arm in arms},
    }
    return json_script(labels, "chart-labels")


@register.simple_tag
def figure_style() -> SafeString:
    """<script id="figure-style">: the app's Plotly template and colour per concept (webapp/site_pages/figure_style.py)."""
    return json_script(style(), "figure-style")
