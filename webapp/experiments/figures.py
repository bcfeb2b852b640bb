"""Plotly figures (plain dicts, drawn by static/js/experiments.js) from experiment results."""
from __future__ import annotations

import math
import re
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from webapp.experiments.pages import DEPTHS
from webapp.site_pages.figure_style import COLORS, COLORWAY, label_text

Figure = dict[str, Any]


def _stack_layer(name: str) -> str:
    """'encoder 3' -> the reader's words for it."""
    stack, _space, index = name.partition(" ")
    words = {"encoder": _("encoder %(n)s"), "decoder": _("decoder %(n)s")}
    return words[stack] % {"n": index} if stack in words else name


LAYER_TICKS = {"dtick": 1, "tickformat": "d"}  # layers are whole numbers: no tick at 1.5


def _layout(title: str, x: str, y: str, **extra: Any) -> dict[str, Any]:
    """Titles and axes; fonts, colours, margins that fit the labels and log ticks come from figure_style (one place)."""
    return {"title": {"text": title}, "xaxis": {"title": {"text": x}, **extra.pop("xaxis_extra", {})},
            "yaxis": {"title": {"text": y}, **extra.pop("yaxis", {})},
            "margin": {"t": 50, "r": 20, "b": 50, "l": 60}, **extra}


def _line(name: str, x: list[Any], y: list[Any], color: str | None = None, **extra: Any) -> dict[str, Any]:
    trace = {"type": "scatter", "mode": "lines", "name": name, "x": x, "y": y, **extra}
    if color:
        trace["line"] = {"color": color, **trace.get("line", {})}
    return trace


def arm_name(arm: dict[str, Any]) -> str:
    """An arm's legend name, saying when and why it stopped early."""
    run = arm["run"]
    if run["status"] == "diverged":
        reasons = {"nan": _("the loss is not a number"), "blow-up": _("the loss blew up")}
        return _("%(label)s (diverged at step %(step)s: %(reason)s)") % {
            "label": label_text(arm["label"]), "step": run["diverged_at"], "reason": reasons.get(run["reason"], run["reason"])}
    return label_text(arm["label"])


def loss_figure(result: dict[str, Any], title: str) -> Figure:
    """Training loss per step, both arms overlaid."""
    traces = [_line(arm_name(a), a["run"]["steps"], a["run"]["loss"], COLORS.get(a["label"])) for a in result["arms"]]
    return {"data": traces, "layout": _layout(title, _("step"), _("training loss (cross-entropy)"))}


def accuracy_figure(result: dict[str, Any], title: str) -> Figure:
    """Validation token accuracy (teacher-forced: each position given the true prefix) at each evaluation."""
    traces = []
    for arm in result["arms"]:
        evals = arm["run"]["evals"]
        traces.append({**_line(arm_name(arm), [e["step"] for e in evals], [e["token_accuracy"] for e in evals],
                               COLORS.get(arm["label"])), "mode": "lines+markers"})
    return {"data": traces, "layout": _layout(title, _("step"), _("validation token accuracy (teacher-forced)"),
                                              yaxis={"range": [0, 1.02]})}


def gradflow_figure(named: list[tuple[str, dict[str, Any]]], *, stack: str, group: str, title: str) -> Figure:
    """Gradient norm of one parameter group against layer, log scale, one line per configuration."""
    traces = []
    for label, result in named:
        rows = [r for r in result["layers"] if r["stack"] == stack]
        means = [r["grad_norms"][group] for r in rows]
        spread = [r["grad_norms_std"][group] for r in rows]
        # On a log axis a bar below zero cannot be drawn: the lower half stops short of zero.
        below = [min(s, 0.9 * m) for s, m in zip(spread, means, strict=True)]
        traces.append({**_line(label_text(label), [r["index"] + 1 for r in rows], means, COLORS.get(label)),
                       "mode": "lines+markers",
                       "error_y": {"type": "data", "array": spread, "arrayminus": below, "visible": True}})
    return {"data": traces, "layout": _layout(title, _("layer (1 = nearest the input)"), _("gradient norm"),
                                              yaxis={"type": "log"}, xaxis_extra=LAYER_TICKS)}


def _log_norms(arm: dict[str, Any]) -> list[list[float | None]]:
    return [[math.log10(v) if v > 0 else None for v in row] for row in arm["run"]["grad_norms"]["layer"]]


def heatmap_figures(result: dict[str, Any]) -> dict[str, Figure]:
    """log10 of each layer's gradient norm (all its parameters) over training, one heatmap per arm, one colour scale."""
    values = [v for arm in result["arms"] for row in _log_norms(arm) for v in row if v is not None]
    z_range = {"zmin": min(values), "zmax": max(values)} if values else {}
    figures = {}
    for arm in result["arms"]:
        norms = arm["run"]["grad_norms"]
        trace = {"type": "heatmap", "x": [_stack_layer(name) for name in norms["layers"]], "y": norms["steps"], "z": _log_norms(arm),
                 "colorscale": "Viridis", "colorbar": {"title": {"text": "log10 ‖g‖"}}, **z_range}
        title = _("%(label)s: gradient norm per layer over training") % {"label": arm_name(arm)}
        figures[f"heatmap_{arm['label']}"] = {"data": [trace], "layout": _layout(title, _("layer"), _("step"))}
    return figures


def zero_layers(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per arm of a trained run, the layers whose gradient was exactly 0 at some recorded step (blank heatmap cells)."""
    found = []
    for arm in result.get("arms", []):
        norms = arm.get("run", {}).get("grad_norms") or {}
        rows = norms.get("layer") or []
        layers = [_stack_layer(name) for j, name in enumerate(norms.get("layers", [])) if any(row[j] == 0 for row in rows)]
        always = [_stack_layer(name) for j, name in enumerate(norms.get("layers", [])) if all(row[j] == 0 for row in rows)]
        if layers:
            found.append({"arm": arm_name(arm), "layers": layers, "always": always,
                          "no_residual": arm.get("label") == "no residual"})
    return found


def drift_figure(result: dict[str, Any], *, measure: str, title: str, y_title: str) -> Figure:
    """Mean over positions of one drift measure against layer (0 = the stack's input), both arms."""
    traces = []
    for arm in result["arms"]:
        y = [_drift_start(arm, measure), *(_layer_value(layer, measure) for layer in arm["layers"])]
        traces.append({**_line(label_text(arm["label"]), list(range(len(y))), y, COLORS.get(arm["label"])),
                       "mode": "lines+markers"})
        if measure == "distance":  # the state's own size beside its distance from the input
            norms = [_mean(arm["input_norm"]), *(_mean(layer["norm"]) for layer in arm["layers"])]
            traces.append(_line(f"{label_text(arm['label'])} · ‖h_l‖", list(range(len(norms))), norms, COLORS.get(arm["label"]),
                                line={"dash": "dot"}))
    return {"data": traces, "layout": _layout(title, _("layer (0 = input embedding + position)"), y_title,
                                              xaxis_extra=LAYER_TICKS)}


def _drift_start(arm: dict[str, Any], measure: str) -> float | None:
    """The value at layer 0 (the input itself); the input's spread is not recorded."""
    return {"cosine": 1.0, "distance": 0.0}.get(measure)


def _layer_value(layer: dict[str, Any], measure: str) -> float:
    value = layer[measure]
    return value if isinstance(value, float | int) else _mean(value)


def drift_positions_figure(result: dict[str, Any], title: str) -> Figure:
    """Cosine of each position's last-layer state with its input: without residuals every token ends alike."""
    traces = [{"type": "bar", "name": label_text(arm["label"]), "x": result["tokens"], "y": arm["layers"][-1]["cosine"],
               "marker": {"color": COLORS.get(arm["label"])}} for arm in result["arms"]]
    return {"data": traces, "layout": _layout(title, _("source token"), _("cosine with the input"), barmode="group")}


def norm_name(name: str) -> str:
    """A norm's module path as a reader says it: 'encoder.layers.0.norm1' -> 'encoder layer 1, norm 1'."""
    parts = name.split(".")
    stack = {"encoder": _("encoder"), "decoder": _("decoder")}.get(parts[0], parts[0])
    if len(parts) == 4 and parts[1] == "layers" and parts[2].isdigit() and parts[3].startswith("norm"):
        return _("%(stack)s layer %(n)s, norm %(k)s") % {"stack": stack, "n": int(parts[2]) + 1, "k": parts[3][4:] or "1"}
    if len(parts) == 2 and parts[1].startswith("norm"):
        return _("%(stack)s, final norm") % {"stack": stack}
    return name


def norm_positions_figure(arm: dict[str, Any], tokens: dict[str, list[str]], title: str) -> Figure:
    """One norm's per-position mean and variance before and after; a menu picks the norm, trained or at init."""
    keys = ("in_mean", "out_mean", "in_var", "out_var")
    names = (_("mean before"), _("mean after"), _("variance before"), _("variance after"))
    trained, at_init = _("trained"), _("at initialisation")
    choices = [(f"{trained} · {norm_name(row['name'])}", row) for row in arm["trained"]]
    choices += [(f"{at_init} · {norm_name(row['name'])}", row) for row in arm["init"]]

    def x_of(row: dict[str, Any]) -> list[str]:
        labels = tokens["src"] if row["name"].startswith("encoder") else tokens["tgt"]
        return [f"{i}:{t}" for i, t in enumerate(labels)]

    first = choices[0][1]
    traces = [{"type": "bar" if k.endswith("var") else "scatter", "name": n, "x": x_of(first), "y": first[k],
               **({"yaxis": "y2", "opacity": 0.55} if k.endswith("var") else {"mode": "lines+markers"})}
              for k, n in zip(keys, names, strict=True)]
    buttons = [{"label": label, "method": "restyle", "args": [{"y": [row[k] for k in keys], "x": [x_of(row)] * len(keys)}]}
               for label, row in choices]
    layout = _layout(title, _("position"), _("mean over d_model"))
    layout.update(yaxis2={"title": {"text": _("variance over d_model")}, "overlaying": "y", "side": "right"},
                  barmode="group", margin={"t": 100, "r": 70, "b": 120, "l": 60},
                  legend={"orientation": "h", "y": -0.38, "yanchor": "top"},  # below the "position" title, not on it
                  updatemenus=[{"buttons": buttons, "x": 0, "y": 1.12, "xanchor": "left", "yanchor": "bottom"}])
    layout["title"]["y"] = 0.97
    return {"data": traces, "layout": layout}


def norm_distribution_figure(result: dict[str, Any], *, stat: str, title: str, when: str = "trained") -> Figure:
    """Box plots over every position of every norm: the statistic before and after, LayerNorm against RMSNorm."""
    traces = []
    for arm in result["arms"]:
        for side, label in (("in", _("before")), ("out", _("after"))):
            values = [v for row in arm[when] for v in row[f"{side}_{stat}"]]
            traces.append({"type": "box", "name": f"{label_text(arm['label'])} · {label}", "y": values,
                           "marker": {"color": COLORS.get(arm["label"])}, "boxpoints": False})
    y_axis = {"type": "log"} if stat == "var" else {}
    return {"data": traces, "layout": _layout(title, "", _("mean over d_model") if stat == "mean" else
                                              _("variance over d_model"), yaxis=y_axis, showlegend=False)}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _named(results: dict[str, Any], names: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    return [(label, results[name]) for name, label in names.items() if results.get(name)]


def norm_position_figures(results: dict[str, Any]) -> dict[str, Figure]:
    """The /experiments/norm-position/ page."""
    figures: dict[str, Figure] = {}
    init = _named(results, {"gradflow_post": "post", "gradflow_pre": "pre"})
    if init:
        figures["init_decoder"] = gradflow_figure(init, stack="decoder", group="ffn.linear2",
                                                  title=_("Decoder: gradient of each layer's FFN W2 at initialisation"))
        figures["init_encoder"] = gradflow_figure(init, stack="encoder", group="ffn.linear2",
                                                  title=_("Encoder: gradient of each layer's FFN W2 at initialisation"))
    pair = results.get("compare_norm_position")
    if pair:
        figures["loss"] = loss_figure(pair, _("Training loss, no warmup, same data and seed"))
        figures["accuracy"] = accuracy_figure(pair, _("Validation token accuracy (teacher-forced)"))
        figures.update(heatmap_figures(pair))
    warmup = results.get("compare_warmup")
    if warmup:
        figures["warmup_loss"] = loss_figure(warmup, _("Post-LN with and without warmup"))
    figures.update(depth_figures(results))
    return figures


def last_layer_gradient(result: dict[str, Any], stack: str = "decoder", group: str = "ffn.linear2") -> float:
    """The gradient norm of the last layer's parameter group (Xiong et al.'s bounds are about this one)."""
    return [r for r in result["layers"] if r["stack"] == stack][-1]["grad_norms"][group]


def depth_figures(results: dict[str, Any]) -> dict[str, Figure]:
    """The last decoder layer's W2 gradient against the total depth L, as is and times √L, both layouts."""
    lines: dict[str, list[tuple[int, float]]] = {}
    for position in ("post", "pre"):
        found = [(layers, results.get(f"depth_{position}_{layers}")) for layers in DEPTHS]
        lines[position] = [(layers, last_layer_gradient(result)) for layers, result in found if result]
    if not any(lines.values()):
        return {}
    figures = {}
    for name, scale, title, y_title in (
        ("depth_decoder", lambda _layers: 1.0, _("Last decoder layer's FFN W2 gradient against depth L"),
         _("gradient norm")),
        ("depth_decoder_scaled", math.sqrt, _("The same times √L: flat where the gradient falls like 1/√L"),
         _("gradient norm × √L")),
    ):
        traces = [{**_line(label_text(position), [n for n, _v in points], [v * scale(n) for n, v in points],
                           COLORS[position]), "mode": "lines+markers"} for position, points in lines.items() if points]
        figures[name] = {"data": traces, "layout": _layout(title, _("number of layers L"), y_title,
                                                          xaxis={"type": "log", "tickvals": list(DEPTHS),
                                                                 "title": {"text": _("number of layers L")}},
                                                          yaxis={"rangemode": "tozero"})}
    return figures


def residual_figures(results: dict[str, Any]) -> dict[str, Figure]:
    """The /experiments/residuals/ page."""
    figures: dict[str, Figure] = {}
    for layers in (6, 12, 24):
        named = _named(results, {f"gradflow_{layers}_res": "residual", f"gradflow_{layers}_nores": "no residual"})
        if named:
            for stack in ("decoder", "encoder"):
                figures[f"init_{stack}_{layers}"] = gradflow_figure(
                    named, stack=stack, group="layer",
                    title=_("%(stack)s, %(n)d layers: gradient norm of each layer at initialisation")
                    % {"stack": _("Decoder") if stack == "decoder" else _("Encoder"), "n": layers})
    drift = results.get("drift")
    if drift:
        figures["drift_cosine"] = drift_figure(drift, measure="cosine", title=_("How much of the input is left"),
                                               y_title=_("cosine(h_l, x_0), mean over positions"))
        figures["drift_distance"] = drift_figure(drift, measure="distance", title=_("Distance from the input"),
                                                 y_title=_("‖h_l − x_0‖ (dotted: ‖h_l‖), mean over positions"))
        figures["drift_spread"] = drift_figure(drift, measure="spread", title=_("How distinct the positions stay"),
                                               y_title=_("spread of the positions around their mean"))
        figures["drift_positions"] = drift_positions_figure(drift, _("Last layer, each source token"))
    pair = results.get("compare_residual")
    if pair:
        figures["loss"] = loss_figure(pair, _("Training loss with and without residuals (Pre-LN)"))
        figures["accuracy"] = accuracy_figure(pair, _("Validation token accuracy (teacher-forced)"))
    return figures


def layernorm_figures(results: dict[str, Any]) -> dict[str, Figure]:
    """The /experiments/layernorm/ page."""
    norms = results.get("norms")
    if not norms:
        return {}
    tokens = {"src": norms["src_tokens"], "tgt": norms["tgt_tokens"]}
    figures = {
        f"positions_{arm['label']}": norm_positions_figure(
            arm, tokens, _("%(label)s: each position before and after the norm") % {"label": label_text(arm["label"])})
        for arm in norms["arms"]
    }
    figures["means"] = norm_distribution_figure(norms, stat="mean", title=_("Per-position means, every norm"))
    figures["variances"] = norm_distribution_figure(norms, stat="var", title=_("Per-position variances, every norm"))
    figures["loss"] = loss_figure(norms, _("Training loss: LayerNorm against RMSNorm"))
    return figures


def _rgba(color: str, alpha: float) -> str:
    """'#2f6fde' -> 'rgba(47,111,222,alpha)': the arm's colour, see-through."""
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _per_step(runs: list[dict[str, Any]]) -> tuple[list[int], list[float], list[float]]:
    """Steps, the mean loss over the seeds that reached each step, and their standard deviation there."""
    longest = max((len(run["loss"]) for run in runs), default=0)
    steps, means, sds = [], [], []
    for i in range(longest):
        values = [run["loss"][i] for run in runs if i < len(run["loss"])]
        mean = sum(values) / len(values)
        steps.append(i + 1)
        means.append(mean)
        sds.append(math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0)
    return steps, means, sds


def sweep_loss_figure(result: dict[str, Any], title: str) -> Figure:
    """Each seed's training loss faint, the mean over seeds bold, a band of one standard deviation around it."""
    traces: list[dict[str, Any]] = []
    for index, arm in enumerate(result["arms"]):
        color = COLORS.get(arm["label"]) or COLORWAY[index % len(COLORWAY)]
        name = label_text(arm["label"])
        group = {"legendgroup": arm["label"]}
        steps, means, sds = _per_step(arm["runs"])
        for run in arm["runs"]:
            traces.append({**_line(_("%(arm)s, seed %(seed)s") % {"arm": name, "seed": run["seed"]},
                                   list(range(1, len(run["loss"]) + 1)), run["loss"], _rgba(color, 0.25)),
                           "line": {"color": _rgba(color, 0.25), "width": 1}, "showlegend": False,
                           "hoverinfo": "skip", **group})
        upper = [m + sd for m, sd in zip(means, sds, strict=True)]
        lower = [m - sd for m, sd in zip(means, sds, strict=True)]
        traces.append({**_line(_("%(arm)s: mean + 1 s.d.") % {"arm": name}, steps, upper), "showlegend": False,
                       "line": {"width": 0, "color": _rgba(color, 0)}, "hoverinfo": "skip", **group})
        traces.append({**_line(_("%(arm)s: ± 1 s.d. over seeds") % {"arm": name}, steps, lower),
                       "line": {"width": 0, "color": _rgba(color, 0)}, "fill": "tonexty",
                       "fillcolor": _rgba(color, 0.18), "hoverinfo": "skip", **group})
        traces.append({**_line(_("%(arm)s: mean of %(n)d seeds") % {"arm": name, "n": len(arm["runs"])}, steps,
                               means, color), "line": {"color": color, "width": 3}, **group})
    return {"data": traces, "layout": _layout(title, _("step"), _("training loss (cross-entropy)"))}


def sweep_final_figure(result: dict[str, Any], title: str) -> Figure:
    """Each seed's final loss (mean of the last tenth of its steps), one column per arm, and the arm's mean."""
    traces = []
    for index, arm in enumerate(result["arms"]):
        color = COLORS.get(arm["label"]) or COLORWAY[index % len(COLORWAY)]
        name = label_text(arm["label"])
        finals = [f for f in arm["final_losses"] if f is not None]
        traces.append({"type": "scatter", "mode": "markers", "name": name, "x": [name] * len(finals), "y": finals,
                       "text": [_("seed %(seed)s") % {"seed": run["seed"]} for run in arm["runs"]
                                if run["final_loss"] is not None],
                       "marker": {"color": _rgba(color, 0.6), "size": 9}})
        if finals:
            traces.append({"type": "scatter", "mode": "markers", "name": _("%(arm)s: mean") % {"arm": name},
                           "x": [name], "y": [sum(finals) / len(finals)],
                           "marker": {"color": color, "size": 18, "symbol": "line-ew-open", "line": {"width": 3}}})
    return {"data": traces, "layout": _layout(title, _("arm"), _("final training loss"))}


def verdict_sentence(verdict: dict[str, Any] | None) -> str:
    """The verdict in the reader's language: "Pre-LN: lowest in 15 of 16 seeds, mean 0.80 ± 0.03 against 2.99 ±
    0.12", or that the seeds show no reliable difference (± one standard error of the mean)."""
    if not verdict:
        return ""
    arms = verdict["arms"]
    leader = next(arm for arm in arms if arm["label"] == verdict["leader"])
    others = pgettext("list separator", ", ").join(
        f"{label_text(arm['label'])} {_number(arm['mean'])} ± {_number(arm['se'])}"
        for arm in arms if arm is not leader)
    figures = _("%(arm)s lowest in %(k)d of %(n)d seeds: mean %(mean)s ± %(se)s against %(others)s") % {
        "arm": label_text(leader["label"]), "k": leader["lowest"], "n": verdict["seeds"],
        "mean": _number(leader["mean"]), "se": _number(leader["se"]), "others": others}
    if verdict["reliable"]:
        return _("Answer: %(arm)s. %(figures)s (± one standard error).") % {
            "arm": label_text(leader["label"]), "figures": figures}
    return _("No reliable difference: %(figures)s (± one standard error). An arm is the answer only when it ends "
             "lowest in at least 90%% of the seeds and its mean is lower by more than twice the standard error of "
             "the gap.") % {"figures": figures}


def _number(value: float) -> str:
    return f"{value:.2g}" if value != 0 and abs(value) < 0.01 else f"{value:.2f}"


def run_figures(kind: str, result: dict[str, Any]) -> dict[str, Figure]:
    """Figures of one launched run."""
    if kind == "sweep":
        return {"loss": sweep_loss_figure(result, _("Training loss of every seed: faint each seed, bold the mean")),
                "final": sweep_final_figure(result, _("Final loss of each seed"))}
    if kind == "gradflow":
        named = [(_("this configuration"), result)]
        return {f"init_{stack}": gradflow_figure(named, stack=stack, group="ffn.linear2",
                                                 title=_("%(stack)s: gradient of each layer's FFN W2 at initialisation")
                                                 % {"stack": _("Decoder") if stack == "decoder" else _("Encoder")})
                for stack in ("decoder", "encoder")}
    if kind in ("compare", "norms"):
        return {"loss": loss_figure(result, _("Training loss")),
                "accuracy": accuracy_figure(result, _("Validation token accuracy (teacher-forced)")), **heatmap_figures(result)}
    return residual_figures({"drift": result}) if kind == "drift" else {}


# modelcore.experiments.sweep.machine()'s words: "AMD EPYC, 2 cores, torch 2.13.0+cpu, 1 thread" (parts that trained
# on several machines joined by " + ").
MACHINE = re.compile(r"^(?P<cpu>.+), (?P<cores>\d+) cores?, torch (?P<torch>\S+), (?P<threads>\d+) threads?$")


def machine_words(machine: str) -> str:
    """The machine a result was computed on, in the reader's language (its CPU's name as it is)."""
    said = []
    for part in machine.split(" + "):
        found = MACHINE.match(part)
        if found is None:
            said.append(part)
            continue
        cores, threads = int(found["cores"]), int(found["threads"])
        said.append(_("%(cpu)s, %(cores)s, PyTorch %(torch)s, %(threads)s") % {
            "cpu": found["cpu"], "torch": found["torch"],
            "cores": ngettext("%(n)d core", "%(n)d cores", cores) % {"n": cores},
            "threads": ngettext("%(n)d thread", "%(n)d threads", threads) % {"n": threads}})
    return " + ".join(said)


def over_seeds(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a page says of a comparison's kept sweep beside its one-seed run (experiments/partials/over_seeds.html):
    the verdict in the reader's language, the seeds and the machine; None without a sweep or a verdict."""
    if not result or not result.get("verdict"):
        return None
    return {"sentence": verdict_sentence(result["verdict"]), "seeds": len(result["seeds"]),
            "machine": machine_words(result.get("machine", ""))}


def result_context(kind: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the result fragment (experiments/partials/result.html) shows of a finished run: its figures, the layers
    a heatmap leaves blank, a sweep's verdict in a sentence and the machine that computed it."""
    return {"figures": run_figures(kind, result),
            "zeros": zero_layers(result) if kind in ("compare", "norms") else [],
            "verdict": verdict_sentence(result.get("verdict")) if kind == "sweep" else "",
            "machine": machine_words(result.get("machine", ""))}
