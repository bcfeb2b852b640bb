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
    context = {"models": models, "limits": limits, "strings": _strings(), "page_request": PAGE_REQUEST,
               **_card(chosen)}
    return render(request, "playground/page.html", context)


def _error_reasons() -> dict[str, str]:
    """What each error code of docs/protocol.md means, in the reader's language (the frame's message is English)."""
    return {
        "bad_json": _("the request could not be read"),
        "bad_frame": _("the request could not be read"),
        "too_large": _("the request is too large"),
        "unknown_type": _("the page sent a request the server does not know"),
        "bad_params": _("a setting is out of range"),
        "empty_source": _("the source is empty"),
        "source_too_long": _("the source is too long for this model"),
        "unknown_model": _("this model is not available"),
        "too_many_decodes": _("you already have as many decodes running as allowed"),
        "rate_limited": _("you started too many decodes in the last minute; wait a moment"),
        "unavailable": _("the server could not queue the request; run it again"),
        "not_running": _("nothing is running"),
        "not_stepping": _("no step-by-step decode is running"),
        "bad_request": _("the decoder refused these settings"),
        "model_unavailable": _("the worker could not load this model"),
        "worker_stopping": _("the worker is restarting; run it again"),
        "worker_lost": _("the worker decoding this stopped answering; run it again"),
        "no_worker": _("no worker is decoding right now; try again in a minute"),
        "internal": _("something went wrong on the worker"),
        "too_many_sockets": _("too many connections of yours are open: close another tab of this site"),
    }


def _strings() -> dict[str, object]:
    """Messages the page's script shows, in the reader's language ({name} marks a value filled in)."""
    return {
        "ready": _("Ready. Press Run, or Step for one token per click."),
        "connecting": _("Connecting…"),
        "reconnecting": _("The connection dropped; reconnecting…"),
        "queued": _("Sent; waiting for a worker…"),
        "running": _("Decoding: {n} tokens so far…"),
        "stepping": _("Step mode: {n} tokens so far. Press Step for the next one."),
        "done": _("Done: {n} tokens, stopped by {reason}."),
        "error": _("Could not decode: {message}."),
        "closed": _("The connection closed and does not reopen; reload the page."),
        "trimmed": _("You pasted {pasted} characters; {kept} were kept: a source holds at most {max}."),
        "count": _("{n} of {max} characters"),
        "errors": _error_reasons(),
        "reason_eos": _("the end token"),
        "reason_max_len": _("the token limit"),
        "reason_cancelled": _("your Cancel"),
        "reason_time_limit": _("the time limit"),
        "mean": _("mean of the heads"),
        "head": _("head {n}"),
        "layer": _("layer {n}"),
        "step": _("step"),
        "source": _("source token"),
        "output": _("output token"),
        "prefix": _("earlier output position"),
        "probability": _("probability"),
        "source_key": _("source token looked at (key)"),
        "source_query": _("source token looking (query)"),
        "positions": _("positions cached"),
        "alt_cross": _("Cross-attention heatmap: one row per output token, one column per source token, darker for more weight."),
        "alt_self": _("Decoder self-attention heatmap: one row per output token, one column per earlier output position."),
        "alt_encoder": _("Encoder self-attention heatmap: every source token against every source token."),
        "alt_beams": _("Beam tree: one column per step, one row per beam; the shown hypothesis is labelled, stars mark ended ones."),
        "kv_summary_alt": _("Positions held in the KV cache per decoder layer: self-attention and cross-attention."),
        "top_beam": _("the live top beam so far: each token's probability given the tokens before it"),
        "best_hypothesis": _("the best hypothesis: each token's probability given the tokens before it"),
        "beam_rank": _("beam (0 = best)"),
        "cache_self": _("self-attention positions"),
        "cache_cross": _("cross-attention positions"),
        "with_cache": _("with the cache"),
        "recompute": _("recomputing the prefix (timed once per length on this worker)"),
        "ms": _("ms per step"),
        "kv_summary": _("{layers} layers × ({self} + {cross} positions) × keys and values = {bytes}"),
        "first_token": _("first token"),
        "total": _("decoding time"),
    }


@signed_in
def model_card(request: HttpRequest) -> HttpResponse:
    """The chosen model's card and example sentences (htmx swaps it in when the picker changes)."""
    model = next((m for m in playground_models(request.user) if m.name == request.GET.get("model")), None)
    if model is None:
        raise Http404("no such model")
    return render(request, "playground/partials/model_card.html", _card(model))
