"""The lesson's attention heatmaps take the app's one weight scale, the one the playground reads from the page."""
from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.django_db


def luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_the_masks_heatmaps_use_the_pages_weight_scale_dark_for_a_large_weight(client_as, student):
    page = client_as(student).get("/lesson/questions/").content.decode()
    style = json.loads(re.search(r'<script id="figure-style" type="application/json">(.*?)</script>', page, re.S)[1])
    masks = json.loads(re.search(r'<div class="figure-set"><script[^>]*>(.*?)</script>', page, re.S)[1])["masks"]
    scale = style["weight_scale"]  # what static/js/playground_views.js colours its attention heatmaps with
    assert [trace["colorscale"] for trace in masks["data"]] == [scale, scale]
    assert not any("reversescale" in trace for trace in masks["data"])
    assert scale[0][0] == 0 and scale[-1][0] == 1 and luminance(scale[-1][1]) < luminance(scale[0][1]) / 4
