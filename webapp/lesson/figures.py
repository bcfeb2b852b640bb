"""Plotly figures (plain dicts, drawn by static/js/lesson.js through figure_style.plot) from the lesson's results."""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from webapp.site_pages.figure_style import COLORS, COLORWAY, WEIGHT_SCALE, label_text

Figure = dict[str, Any]


def _layout(title: str, x: str, y: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "xaxis": {"title": {"text": x}, **extra.pop("xaxis", {})},
            "yaxis": {"title": {"text": y}, **extra.pop("yaxis", {})}, "margin": {"t": 50, "r": 20, "b": 60, "l": 70},
            **extra}


def _labels(tokens: list[str]) -> list[str]:
    """Token strings made unique for a categorical axis (a repeated character would share one row otherwise)."""
    return [t if t == str(i) else f"{i}:{t}" for i, t in enumerate(tokens)]


def _heatmap(z: list[list[float]], x: list[str], y: list[str], title: str, xt: str, yt: str, **extra: Any) -> Figure:
    trace = {"type": "heatmap", "z": z, "x": _labels(x), "y": _labels(y), "colorscale": WEIGHT_SCALE, **extra}
    return {"data": [trace], "layout": _layout(title, xt, yt, yaxis={"autorange": "reversed", "type": "category"},
                                               xaxis={"type": "category"})}


def _side_by_side(mats: list[list[list[float]]], x: list[str], y: list[str], titles: list[str], title: str,
                  xt: str, yt: str, ticks: bool | None = None) -> Figure:
    """Several heatmaps in one figure, one axis pair each (every head of a layer, or two masks)."""
    n, gap = len(mats), 0.04
    width = (1 - gap * (n - 1)) / n
    data, layout = [], {"title": {"text": title}, "margin": {"t": 70, "r": 20, "b": 60, "l": 70}, "annotations": []}
    for i, (z, name) in enumerate(zip(mats, titles, strict=True)):
        suffix = "" if i == 0 else str(i + 1)
        data.append({"type": "heatmap", "z": z, "x": _labels(x), "y": _labels(y), "colorscale": WEIGHT_SCALE,
                     "showscale": i == n - 1, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "zmin": 0, "zmax": 1})
        start = i * (width + gap)
        layout[f"xaxis{suffix}"] = {"domain": [start, start + width], "type": "category", "showticklabels": n <= 2 if ticks is None else ticks,
                                    "title": {"text": xt}}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "autorange": "reversed", "type": "category",
                                    "showticklabels": i == 0, "title": {"text": yt if i == 0 else ""}}
        # Centred over its subplot (Plotly's "auto" anchors a title in the left third by its left end, in the right
        # third by its right end, so that neighbours ran into each other).
        layout["annotations"].append({"text": name, "x": start + width / 2, "y": 1.0, "xref": "paper", "yref": "paper",
                                      "xanchor": "center", "yanchor": "bottom", "showarrow": False})
    return {"data": data, "layout": layout}


def masks_figure(n: int) -> Figure:
    """The encoder's mask (every key) beside the decoder's causal mask (keys up to the query), for n positions."""
    tokens = [str(i) for i in range(n)]
    full = [[1] * n for _ in range(n)]
    causal = [[1 if k <= q else 0 for k in range(n)] for q in range(n)]
    return _side_by_side([full, causal], tokens, tokens, [_("encoder: may attend"), _("decoder: may attend")],
                         _("The two masks side by side (1 = may attend, 0 = hidden)"), _("key"), _("query"))


def stacks_figure(n_source: int, n_target: int) -> Figure:
    """Which position may read which, over one sequence of source then target: each stack layout's masks as one."""
    labels = [f"s{i + 1}" for i in range(n_source)] + [f"t{i + 1}" for i in range(n_target)]
    n = len(labels)
    bert = [[1] * n for _ in range(n)]
    gpt = [[1 if k <= q else 0 for k in range(n)] for q in range(n)]
    # Source rows read the source (encoder self-attention); target rows read every source position
    # (cross-attention) and the target up to themselves (masked self-attention).
    both = [[1 if k < n_source or (q >= n_source and k <= q) else 0 for k in range(n)] for q in range(n)]
    return _side_by_side([bert, gpt, both], labels, labels,
                         [_("encoder alone"), _("decoder alone"), _("encoder-decoder")],
                         _("Who may read whom in one sequence of source (s) then target (t)"), _("key"), _("query"),
                         ticks=True)


def _bars(x: list[str], series: list[tuple[str, list[float]]], title: str, xt: str, yt: str) -> Figure:
    data = [{"type": "bar", "name": name, "x": _labels(x) if len(x) and isinstance(x[0], str) else x, "y": y,
             "marker": {"color": COLORWAY[i % len(COLORWAY)]}} for i, (name, y) in enumerate(series)]
    # Tokens' tick labels may turn; the legend goes below them and the axis title.
    return {"data": data, "layout": _layout(title, xt, yt, barmode="group", legend={"y": -0.4},
                                            margin={"t": 50, "r": 20, "b": 110, "l": 70})}


def encoder_figures(r: dict[str, Any]) -> dict[str, Figure]:
    tokens, head, row = r["tokens"], r["head"], r["row"]
    dims = list(range(len(r["positions"][0])))
    query = tokens[r["query"]]
    return {
        "positions": {"data": [{"type": "heatmap", "z": r["positions"], "x": dims, "y": _labels(tokens),
                                "colorscale": "RdBu", "zmid": 0}],
                      "layout": _layout(_("Positional encoding of each position"), _("dimension of d_model"), _("position"),
                                        yaxis={"autorange": "reversed", "type": "category"})},
        "norms": _bars(tokens, [(_("token embedding × √d_model"), r["embedding_norm"]),
                                (_("positional encoding"), r["position_norm"])],
                       _("Size (L2 norm) of what is added at each position"), _("position"), _("norm")),
        "attention": _heatmap(r["attention"][head], tokens, tokens,
                              _("Encoder layer %(l)s, head %(h)s: every query sees every key") % {"l": r["layer"] + 1, "h": head + 1},
                              _("key"), _("query")),
        "heads": _side_by_side(r["attention"], tokens, tokens, [_("head %(h)s") % {"h": h + 1} for h in range(len(r["attention"]))],
                               _("Every head of encoder layer %(l)s") % {"l": r["layer"] + 1}, _("key"), _("query")),
        "row_scores": _bars(tokens, [(_("q·k"), row["scores"]), (_("q·k / √d_k"), row["scaled"])],
                            _("Scores of the query %(q)s, before and after the scaling") % {"q": query}, _("key"), _("score")),
        "row_weights": _bars(tokens, [(_("softmax"), row["weights"])],
                             _("Attention weights of the query %(q)s (they sum to 1)") % {"q": query}, _("key"), _("weight")),
        "ffn": {"data": [{"type": "bar", "x": list(range(len(r["ffn"]["hidden"]))), "y": r["ffn"]["hidden"],
                          "marker": {"color": COLORS["loss"]}}],
                "layout": _layout(_("The FFN's %(d)s middle units for %(q)s after the ReLU") % {"d": r["ffn"]["d_ff"], "q": query},
                                  _("unit of d_ff"), _("activation"))},
    }


def decoder_figures(r: dict[str, Any]) -> dict[str, Figure]:
    src, tgt, head = r["src_tokens"], r["tgt_tokens"], r["head"]
    query = tgt[r["query"]]
    pad = r["padding"]
    shorter = pad["tokens"][pad["shorter"]]
    return {
        "self_attention": _heatmap(r["self_attention"][head], tgt, tgt,
                                   _("Masked self-attention, decoder layer %(l)s, head %(h)s") % {"l": r["layer"] + 1, "h": head + 1},
                                   _("key (target so far)"), _("query (target)")),
        "cross_attention": _heatmap(r["cross_attention"][head], src, tgt,
                                    _("Cross-attention, decoder layer %(l)s, head %(h)s") % {"l": r["layer"] + 1, "h": head + 1},
                                    _("key (source, from the encoder)"), _("query (target)")),
        # The scaled scores are in the table above; on one axis with them the weights (0..1) would not show.
        "cross_row": _bars(src, [(_("softmax"), r["cross_row"]["weights"])],
                           _("Cross-attention of the query %(q)s over the source") % {"q": query}, _("source token"),
                           _("weight")),
        "padding": _heatmap(pad["attention"], shorter, shorter,
                            _("The shorter sentence in a batch of two: encoder layer 1, head 1"), _("key"), _("query")),
    }


def residual_figures(r: dict[str, Any]) -> dict[str, Figure]:
    names = {"residual": _("with residuals"), "no residual": _("without residuals")}
    layers = [layer["index"] + 1 for layer in r["arms"][0]["layers"]]

    def lines(field: str, title: str, y: str) -> Figure:
        data = [{"type": "scatter", "mode": "lines+markers", "name": names[a["label"]], "x": layers,
                 "y": [layer[field] for layer in a["layers"]], "line": {"color": COLORS[a["label"]]}} for a in r["arms"]]
        return {"data": data, "layout": _layout(title, _("encoder layer"), y, xaxis={"dtick": 1, "tickformat": "d"})}

    stats = r["norm"]
    positions = stats["tokens"][: len(stats["in_mean"])]
    return {
        "distance": lines("mean_distance", _("Mean distance ‖h_l − x_0‖ from the stack's input"), _("distance")),
        "spread": lines("spread", _("How distinct the positions stay (spread / norm)"), _("spread")),
        "norm_stats": _bars(positions, [(_("mean before"), stats["in_mean"]), (_("variance before"), stats["in_var"]),
                                        (_("mean after"), stats["out_mean"]), (_("variance after"), stats["out_var"])],
                            _("%(norm)s: each position's mean and variance over d_model") % {"norm": stats["name"]},
                            _("position"), _("value")),
    }


def norms_figures(r: dict[str, Any]) -> dict[str, Figure]:
    shift = r["batchnorm_shift"]
    tokens = r["tokens"]
    return {
        "batchnorm": _bars(tokens, [(_("BatchNorm in training mode (this batch's statistics)"), shift["batch"]),
                                    (_("the same, padding counted"), shift["batch_with_padding"]),
                                    (_("BatchNorm in inference mode (running averages)"), shift["inference"]),
                                    (_("LayerNorm"), r["layernorm_shift"])],
                           _("How far each token's normalised vector moves when another sentence shares the batch"),
                           _("position"), _("distance from its value alone")),
        "modes": _bars(tokens, [(_("training mode against inference mode"), r["mode_gap"]),
                                (_("length of the normalised vector"), r["normalised_norm"])],
                       _("BatchNorm: the same token in the same batch, normalised in training and at inference"),
                       _("position"), _("distance")),
        "means": _bars(tokens, [(_("what the norm reads"), r["input"]["mean"]),
                                (_("LayerNorm output"), r["layernorm_out"]["mean"]),
                                (_("RMSNorm output"), r["rmsnorm_out"]["mean"])],
                       _("Each position's mean over d_model, before and after the norm"), _("position"), _("mean")),
    }


def _lines(x: list[Any], series: list[tuple[str, list[float], str]], title: str, xt: str, yt: str,
           **extra: Any) -> Figure:
    """One line per series (its name, values and colour), markers on the measured points."""
    data = [{"type": "scatter", "mode": "lines+markers", "name": name, "x": x, "y": y, "line": {"color": color}}
            for name, y, color in series]
    return {"data": data, "layout": _layout(title, xt, yt, **extra)}


def recurrence_figures(r: dict[str, Any]) -> dict[str, Figure]:
    first, profile = r["first"], r["profile"]
    names = [(_("this encoder (trained)"), "encoder", COLORWAY[0]), (_("an RNN (untrained)"), "rnn", COLORWAY[1]),
             (_("a GRU (untrained)"), "gru", COLORWAY[3])]
    n = r["lengths"][-1]
    log = {"type": "log", "exponentformat": "power"}
    return {
        "first": _lines(r["lengths"], [(name, first[key], color) for name, key, color in names],
                        _("Gradient of the last output with respect to the first input"), _("positions n"),
                        _("‖∂y_n / ∂x_1‖"), yaxis=log, xaxis={"type": "log", "tickvals": r["lengths"]}),
        "profile": _lines(list(range(1, n + 1)), [(name, profile[key], color) for name, key, color in names],
                          _("n = %(n)s: the last output's gradient with respect to each input") % {"n": n},
                          _("input position j"), _("‖∂y_n / ∂x_j‖"), yaxis=log),
    }


def cost_figures(r: dict[str, Any]) -> dict[str, Figure]:
    n = r["lengths"]
    log = {"type": "log", "tickvals": n}
    mib = [b / 2**20 for b in r["weights_bytes"]]
    ops = r["multiply_adds"]
    return {
        "time": _lines(n, [(_("self-attention"), r["attention_ms"], COLORWAY[1]), (_("FFN"), r["ffn_ms"], COLORWAY[0])],
                       _("Time of one encoder layer's sublayers"), _("positions n"), _("milliseconds"),
                       xaxis=log, yaxis={"type": "log"}),
        "memory": _lines(n, [(_("attention weights (h × n × n)"), mib, COLORWAY[1])],
                         _("Memory of one layer's attention weights"), _("positions n"), _("MiB"),
                         xaxis=log, yaxis={"type": "log"}),
        "arithmetic": _lines(n, [(_("q·k and the weighted sum (n²)"), ops["n_squared"], COLORWAY[1]),
                                 (_("projections and FFN (n)"), ops["linear"], COLORWAY[0])],
                             _("Multiply-adds of one encoder layer"), _("positions n"), _("multiply-adds"),
                             xaxis=log, yaxis={"type": "log", "exponentformat": "power"}),
    }


def cache_figures(r: dict[str, Any]) -> dict[str, Figure]:
    steps = list(range(1, r["steps"] + 1))
    kib = [b / 1024 for b in r["cache_bytes"]]
    return {
        "steps": _lines(steps, [(_("prefix recomputed every step"), r["recompute_ms"], COLORS["recompute"]),
                                (_("with the KV cache"), r["cached_ms"], COLORS["pre"])],
                        _("Time of each generated token"), _("step (tokens written)"), _("milliseconds"),
                        yaxis={"rangemode": "tozero"}),
        "cache_size": _lines(steps, [(_("keys and values kept"), kib, COLORS["pre"])],
                             _("Size of the KV cache"), _("step (tokens written)"), _("KiB"), yaxis={"rangemode": "tozero"}),
    }


# The arms of each training comparison as modelcore.lesson.training labels them (in its results and progress frames).
ARM_LABELS = {"mask": ("causal mask", "no mask"), "ffn": tuple(f"d_ff = {w} × d_model" for w in (1, 2, 4))}


def arm_label(label: str) -> str:
    """A training arm's label in the reader's language (results and progress frames keep the English one)."""
    return label_text(label)


def arm_names(kind: str) -> dict[str, str]:
    """Each arm's label -> the label shown, for the live loss chart of a running comparison."""
    return {label: arm_label(label) for label in ARM_LABELS.get(kind, ())}


def training_figures(r: dict[str, Any]) -> dict[str, Figure]:
    data = []
    for i, arm in enumerate(r["arms"]):
        data.append({"type": "scatter", "mode": "lines", "name": arm_label(arm["label"]),
                     "x": list(range(1, len(arm["loss"]) + 1)), "y": arm["loss"],
                     "line": {"color": COLORWAY[i % len(COLORWAY)]}})
    labels = [arm_label(a["label"]) for a in r["arms"]]
    scores = {"data": [
        {"type": "bar", "name": _("final training loss"), "x": labels, "y": [a["final_loss"] for a in r["arms"]]},
        {"type": "bar", "name": _("exact match when generating"), "x": labels, "y": [a["exact_match"] for a in r["arms"]]},
    ], "layout": _layout(_("Training loss against generation"), "", _("value"), barmode="group")}
    return {"loss": {"data": data, "layout": _layout(_("Training loss"), _("step"), _("loss (cross-entropy)"),
                                                     yaxis={"type": "log"})}, "scores": scores}


BUILDERS = {"encoder": encoder_figures, "decoder": decoder_figures, "residual": residual_figures,
            "norms": norms_figures, "recurrence": recurrence_figures, "cost": cost_figures, "cache": cache_figures,
            "mask": training_figures, "ffn": training_figures}


def figures_for(kind: str, result: dict[str, Any]) -> dict[str, Figure]:
    return BUILDERS[kind](result)
