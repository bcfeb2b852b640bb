"""The playground page and its model picker fragment."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from webapp.accounts.permissions import signed_in
from webapp.playground.examples import examples_for
from webapp.playground.protocol import MAX_ALTERNATIVES, MAX_BEAMS, MAX_PACE_MS, PAGE_REQUEST
from webapp.playground.services import playground_models
from webapp.playground.strings import page_strings
from webapp.registry.models import TrainedModel


def _card_facts(model: TrainedModel) -> list[str]:
    """The model card's line after its title: each fact once, figures by their names in the reader's language."""
    config, title = model.config, _(model.title).lower() if model.title else ""
    facts = []
    if config.get("norm_position") and f"{config['norm_position']}-ln" not in title:
        facts.append(f"{config['norm_position'].capitalize()}-LN")
    if config.get("n_encoder_layers"):
        facts.append(_("%(enc)s+%(dec)s layers") % {"enc": config["n_encoder_layers"], "dec": config.get("n_decoder_layers")})
    if config.get("n_heads"):
        facts.append(_("%(n)s heads") % {"n": config["n_heads"]})
    if config.get("d_model"):
        facts.append(f"d={config['d_model']}")
    metrics = model.headline_metrics
    if "bleu" in metrics:
        facts.append(_("test BLEU %(v)s") % {"v": f"{metrics['bleu']:.1f}"})
    if "exact_match" in metrics:
        facts.append(_("exact match %(v)s") % {"v": f"{metrics['exact_match']:.1%}"})
    if "token_accuracy" in metrics:
        facts.append(_("teacher-forced token accuracy %(v)s") % {"v": f"{metrics['token_accuracy']:.1%}"})
    return facts


def _card(model: TrainedModel | None) -> dict[str, Any]:
    if model is None:
        return {"model": None, "examples": [], "facts": []}
    return {"model": model, "examples": examples_for(model.task), "facts": _card_facts(model)}


@signed_in
def playground(request: HttpRequest) -> HttpResponse:
    """Type a source, pick a model and a strategy, watch the decoder work token by token."""
    models = playground_models(request.user)
    wanted = request.GET.get("model")
    chosen = next((m for m in models if m.name == wanted), models[0] if models else None)
    limits = {
        "max_source_chars": settings.PLAYGROUND_MAX_SOURCE_CHARS, "max_tokens": settings.PLAYGROUND_MAX_TOKENS,
        "max_beams": MAX_BEAMS, "max_alternatives": MAX_ALTERNATIVES, "max_pace_ms": MAX_PACE_MS,
    }
    context = {"models": models, "limits": limits, "strings": page_strings(), "page_request": PAGE_REQUEST,
               **_card(chosen)}
    return render(request, "playground/page.html", context)


@signed_in
def model_card(request: HttpRequest) -> HttpResponse:
    """The chosen model's card and example sentences (htmx swaps it in when the picker changes)."""
    model = next((m for m in playground_models(request.user) if m.name == request.GET.get("model")), None)
    if model is None:
        raise Http404("no such model")
    return render(request, "playground/partials/model_card.html", _card(model))
