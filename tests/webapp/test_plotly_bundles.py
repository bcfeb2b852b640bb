"""The live session's pages load plotly.js's cartesian bundle (static/vendor/plotly-cartesian/), the other pages the
full one the installed Python plotly serves: the two are the same plotly.js version, and the cartesian one has every
trace type the session's figures use."""
from __future__ import annotations

import re
from pathlib import Path

import plotly

ROOT = Path(__file__).resolve().parents[2]
CARTESIAN = ROOT / "static" / "vendor" / "plotly-cartesian" / "plotly-cartesian.min.js"


def version(path: Path) -> str:
    return re.search(r"plotly\.js(?: \([^)]*\))? (v[0-9.]+)", path.read_text(encoding="utf-8")[:400]).group(1)


def test_the_cartesian_bundle_is_the_same_plotly_js_as_the_full_one():
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert version(CARTESIAN) == version(full)


def test_the_cartesian_bundle_has_every_trace_type_the_live_sessions_figures_draw():
    bundled = set(re.findall(r'moduleType:"trace",name:"([a-z0-9]+)"', CARTESIAN.read_text(encoding="utf-8")))
    sources = [*(ROOT / "static" / "js").glob("*.js"), *(ROOT / "webapp").rglob("*.py")]
    used = {kind for path in sources for kind in re.findall(r'"?type"?: ?"(scatter\w*|bar|heatmap\w*|histogram\w*|box|'
                                                            r'violin|pie|contour\w*|table|sankey|treemap|'
                                                            r'sunburst|parcoords|splom|scattergl|surface)"',
                                                            path.read_text(encoding="utf-8"))}
    assert used and used <= bundled, used - bundled
