"""The lesson as it is drawn for readers: a page's context, a part of a page, a demonstration's fragment and a
training comparison's panel. What a live session's screens are sent (webapp/classroom/steps/screens.py) is rendered
here once per language, without a request: the same text for every reader of that language."""
from __future__ import annotations

import json
from typing import Any

from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse

from webapp.experiments.figures import over_seeds
from webapp.experiments.services import experiment_sweep_kept
from webapp.lesson import content
from webapp.lesson.diagram import diagram, norm_names
from webapp.lesson.figures import arm_label, arm_names, figures_for, masks_figure, stacks_figure
from webapp.lesson.models import TrainingRun
from webapp.lesson.parts import TEMPLATES, part_html
from webapp.lesson.services import (
    DEFAULT_MODEL,
    DEFAULT_SENTENCE,
    DEMO_MAX_CHARS,
    progress_revealed,
    training_latest,
    training_queue_place,
    workers_present,
)
from webapp.ops.sealed import is_sealed
from webapp.registry.coverage import lesson_example
from webapp.registry.models import TrainedModel
from webapp.registry.services import models_visible_to


def model_card() -> dict[str, Any]:
    """The shipped model the pages describe: its configuration and training settings, from the registry.

    Every lesson page shows it, and each registry row carries its whole training history (30-40 kB of JSON): the
    card is built again only when the rows it reads change (their `updated_at`), else this process's copy in the
    active language (its counts are written as each language writes numbers) serves.
    """
    rows = TrainedModel.objects.filter(Q(name=DEFAULT_MODEL) | Q(shipped=True))
    version = tuple(rows.order_by("name").values_list("name", "updated_at", "shipped"))
    language = content.lang()
    kept = _cards.get(language)
    if kept is None or kept[0] != version:
        kept = _cards[language] = (version, _build_model_card())
    return kept[1]


_cards: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}  # language -> (the rows' versions, the card)


def _build_model_card() -> dict[str, Any]:
    model = TrainedModel.objects.filter(name=DEFAULT_MODEL).only("config", "metrics").first()
    config = model.config if model else {}
    metrics = (model.metrics if model else {}) or {}
    train = metrics.get("train", {}) or {}
    seconds = metrics.get("train_seconds")
    return {"name": DEFAULT_MODEL, "config": config, "train": train, "found": model is not None,
            # How long it trained, as its metrics recorded it: the overview says so rather than "minutes".
            "steps": metrics.get("step"), "threads": metrics.get("torch_threads"),
            "train_minutes": round(seconds / 60) if seconds else None,
            "encoder_layers": range(config.get("n_encoder_layers", 0)),
            "decoder_layers": range(config.get("n_decoder_layers", 0)), "heads": range(config.get("n_heads", 0)),
            "diagram": diagram(config), "norms": norm_names(config),
            **content.vocabulary_share(),
            "parameters": content.count_text(content.parameter_count(config)) if config else None,
            "parameter_rows": content.parameter_rows(
                [(m.name, m.config) for m in TrainedModel.objects.filter(shipped=True).only("name", "config")
                 .order_by("name")])}


def pages() -> list[tuple[str, str, str]]:
    return [(p, str(content.PAGE_TITLES[p]), reverse(f"lesson:{TEMPLATES[p]}")) for p in content.PAGES]


def page_context(user: Any, page: str, **extra: Any) -> dict[str, Any]:
    return {
        "page": page, "pages": pages(),
        "title": str(content.PAGE_TITLES[page]), "errata": content.errata(page),
        "exercises": content.exercises(page, progress_revealed(user=user, page=page)),
        # The demonstration forms list the names only: not each model's training history.
        "models": models_visible_to(user).filter(task="zh-en").only("name"), "default_model": DEFAULT_MODEL,
        "default_sentence": DEFAULT_SENTENCE, "demo_max_chars": DEMO_MAX_CHARS, "model_card": model_card(), "paper": content.PAPER, **extra,
    }


def _unsealed(run: TrainingRun | None) -> TrainingRun | None:
    """A comparison's latest run for its page, unless a class is predicting it (then the page offers only Train)."""
    return None if run is None or is_sealed(run) else run


# What each page's view adds to the shared context (the figures some pages draw).
PAGE_EXTRAS = {
    "decoder": lambda: {"run": _unsealed(training_latest(kind="mask")), "alignment": content.alignment(),
                        "dropped": lesson_example()},
    "questions": lambda: {"run": _unsealed(training_latest(kind="ffn")), "figures": {"masks": masks_figure(7)},
                          "stacks": {"stacks": stacks_figure(4, 3)}},
    "glossary": lambda: {"terms": content.glossary()},
}


def part_text(page: str, part: str, user: Any) -> str:
    """A part of a page in the active language, as a class's screens show it (parts.part_html: cut from the page,
    kept a minute). `user` only fills what the cut leaves out (the demonstration forms' models, the exercises)."""
    def render_page() -> str:
        context = page_context(user, page, **PAGE_EXTRAS.get(page, dict)())
        return render_to_string(f"lesson/{content.lang()}/{TEMPLATES[page]}.html", context)

    return part_html(page, part, render_page)


def demo_context(kind: str, result: dict[str, Any], cached: bool) -> dict[str, Any]:
    return {"kind": kind, "result": result, "cached": cached, "figures": figures_for(kind, result)}


def demo_text(kind: str, result: dict[str, Any], cached: bool) -> str:
    """A demonstration's result as the lesson page shows it, in the active language."""
    return render_to_string(f"lesson/partials/demo_{kind}.html", demo_context(kind, result, cached))


def queue_context(run: TrainingRun) -> dict[str, Any]:
    return {"run": run, "queue": training_queue_place(run=run), "queue_url": reverse("lesson:run_queue", args=[run.pk])}


def run_panel_context(run: TrainingRun) -> dict[str, Any]:
    if is_sealed(run):  # a class is predicting it: nothing of it before the class's reveal
        return {"sealed": True, "run": run, "figures": {}, "arms": [], "no_worker": False, "arm_names": "{}"}
    done = run.status == TrainingRun.Status.SUCCEEDED
    figures = figures_for(run.kind, run.result) if done else {}
    waiting = run.status == TrainingRun.Status.QUEUED and workers_present("experiments") is False
    arms = [{**arm, "shown": arm_label(arm["label"])} for arm in run.result["arms"]] if done else []
    return {"figures": figures, "no_worker": waiting, "arms": arms, **(_over_seeds(run.kind) if done else {}),
            "arm_names": json.dumps(arm_names(run.kind), ensure_ascii=False), **queue_context(run)}


def _over_seeds(kind: str) -> dict[str, Any]:
    """The comparison's kept 16-seed sweep, when there is one (the panel's run is one seed: close arms rank either
    way from seed to seed)."""
    return {"over_seeds": over_seeds(experiment_sweep_kept(comparison=kind))}


def run_panel_text(run: TrainingRun) -> str:
    """A training comparison's panel (its curves once it is done), in the active language."""
    return render_to_string("lesson/partials/run.html", run_panel_context(run))
