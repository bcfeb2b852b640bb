"""The experiment figures speak the reader's words: norms by layer, layers as whole numbers, one colour per arm."""
from __future__ import annotations

import json
from pathlib import Path

from django.utils import translation

from webapp.experiments.figures import layernorm_figures, norm_name
from webapp.site_pages.figure_style import COLORS

DEFAULTS = Path(__file__).resolve().parents[3] / "webapp" / "experiments" / "defaults" / "layernorm.json"


def test_a_norm_is_named_by_its_stack_layer_and_place():
    assert norm_name("encoder.layers.0.norm1") == "encoder layer 1, norm 1"
    assert norm_name("decoder.layers.2.norm3") == "decoder layer 3, norm 3"
    assert norm_name("decoder.norm") == "decoder, final norm"
    with translation.override("zh-hans"):
        assert norm_name("encoder.layers.0.norm2") == "编码器第 1 层的第 2 个归一化"


def test_the_layernorm_page_menu_shows_no_module_paths_and_its_legend_clears_the_axis_title():
    figures = layernorm_figures({"norms": json.loads(DEFAULTS.read_text())["norms"]["result"]})  # the shipped result
    positions = [f for name, f in figures.items() if name.startswith("positions_")]
    assert positions
    for figure in positions:
        labels = [button["label"] for button in figure["layout"]["updatemenus"][0]["buttons"]]
        assert labels and not any(".layers." in label or ".norm" in label for label in labels), labels[:3]
        assert figure["layout"]["legend"]["y"] < -0.3  # below the x axis's "position", not over it
    loss = figures["loss"]["data"]
    assert {trace["line"]["color"] for trace in loss} <= {COLORS["layernorm"], COLORS["rmsnorm"]}
