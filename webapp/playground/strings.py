"""What the playground page's script says, in the reader's language: its status lines, error codes, chart labels and
the done frame's judgement. The live session's pages show the same views and read these too."""
from __future__ import annotations

from django.utils.translation import gettext as _


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
        "catching_up": _("this server lost its link to the message service: the decode may go on without this "
                         "screen, which catches up once the link is back"),
        "steps_lost": _("some steps were lost on their way to this screen and could not be fetched again"),
        "no_worker": _("no worker is decoding right now; try again in a minute"),
        "internal": _("something went wrong on the worker"),
        "too_many_sockets": _("too many connections of yours are open: close another tab of this site"),
    }


def page_strings() -> dict[str, object]:
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
        **_judgement_strings(),
    }


def _judgement_strings() -> dict[str, str]:
    """What the page says of a done frame's confidence and warnings ({p}, {t}: percent; {words}: the words)."""
    return {
        "confidence": _("Confidence: {p} % (the chance, measured on held-out sentences, that an output this sure is "
                        "right or nearly)."),
        "confidence_uncalibrated": _("Confidence: {p} % (the mean probability of its tokens; not calibrated for "
                                     "this model)."),
        "no_warning": _("No warning. The model can still be wrong: check the meaning yourself."),
        "warn_low_confidence": _("Low confidence: below {t} %, most outputs are wrong. Do not trust this translation."),
        "warn_repetition": _("Repetition: the output repeats itself or ran to the token limit; the model is lost."),
        "warn_unknown_words": _("Words never seen in training: {words}. The model can only guess at them."),
        "warn_dropped_words": _("Dropped words: a word of the source is not in the translation (underlined below)."),
        "warn_negation_lost": _("Negation lost: the source says no or not, the translation does not. The meaning "
                                "may be reversed."),
        **coverage_strings(),
    }


def coverage_strings() -> dict[str, str]:
    """What static/js/coverage.js says of a done frame's `coverage` ({words}: the missing source words)."""
    return {
        "coverage_label": _("Source, each word missing from the translation underlined:"),
        "coverage_one": _("{words} is not in the translation."),
        "coverage_many": _("{words} are not in the translation."),
        "coverage_and": _(" and "),
        "coverage_none": _("Every source word checked is in the translation."),
    }
