"""Registering model folders and choosing which the class may use."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext_noop

from webapp.accounts.roles import Role, has_role
from webapp.registry.models import TrainedModel

# Stored in English; the pages translate them when shown ({% translate model.title %}).
SHIPPED_TITLES = {
    "zh-en-post": gettext_noop("Chinese → English, Post-LN (the 2017 paper's layout)"),
    "zh-en-pre": gettext_noop("Chinese → English, Pre-LN (same size, data and seed)"),
    "zh-en-hsk": gettext_noop("Chinese → English on real sentences: HSK and Tatoeba (mixed with generated ones)"),
    "reverse": gettext_noop("Reverse a sequence of symbols"),
}


class RegistryError(ValueError):
    """A folder that is not a complete model folder."""


def model_register_folder(
    *, folder: Path, name: str, task: str | None = None, title: str = "", shipped: bool = False,
    published: bool | None = None, created_by: Any = None,
) -> TrainedModel:
    """Create or refresh the registry entry for a model folder (idempotent by name)."""
    from modelcore.folder import CheckpointError, read_summary

    folder = Path(folder)
    try:
        summary = read_summary(folder)
    except CheckpointError as error:
        raise RegistryError(str(error)) from None
    config, metrics = summary.config, summary.metrics
    model_config = config.get("model", config)
    defaults: dict[str, Any] = {
        "task": task or config.get("task") or metrics.get("task") or "unknown",
        "title": title,
        "config": model_config,
        "metrics": metrics,
        "path": str(folder.resolve()),
        "checkpoint_hash": summary.checkpoint_hash,
        "size_bytes": summary.size_bytes,
        "shipped": shipped,
    }
    # Publication and ownership are set once, at creation: re-registering keeps the admin's choice.
    create_defaults = {**defaults, "published": bool(published), "created_by": created_by}
    model, _ = TrainedModel.objects.update_or_create(name=name, defaults=defaults, create_defaults=create_defaults)
    return model


def shipped_models_register() -> list[TrainedModel]:
    """Register every model in modelcore/shipped, published on first registration."""
    from modelcore.folder import SHIPPED_DIR, shipped_models

    return [
        model_register_folder(folder=SHIPPED_DIR / name, name=name, title=SHIPPED_TITLES.get(name, ""),
                              shipped=True, published=True)
        for name in shipped_models()
    ]


def models_visible_to(user: Any) -> QuerySet[TrainedModel]:
    """Admins see every model; everyone else the published ones."""
    models = TrainedModel.objects.all()
    return models if has_role(user, Role.ADMIN) else models.filter(published=True)


def model_set_published(*, model: TrainedModel, published: bool) -> TrainedModel:
    """Show a model to the class, or hide it."""
    model.published = published
    model.save(update_fields=["published", "updated_at"])
    return model


MAX_KNOWLEDGE_CHARS = 500  # the playground's source box holds less; a longer query is refused, not cut


def model_knowledge(*, model: TrainedModel, source: str) -> dict[str, Any]:
    """The source cut into known and unknown spans for this model, with its card (what it was trained on)."""
    from modelcore.tasks.knowledge import known_spans, unknown_words
    from webapp.registry.cards import card_for

    if len(source) > MAX_KNOWLEDGE_CHARS:
        raise RegistryError(f"at most {MAX_KNOWLEDGE_CHARS} characters")
    card = card_for(name=model.name, task=model.task)
    try:
        tokenizer = _source_tokenizer(str(model.folder), model.checkpoint_hash)
    except (OSError, ValueError, KeyError) as error:
        raise RegistryError(f"the tokenizer of {model.name} could not be read ({type(error).__name__})") from None
    spans = known_spans(source, tokenizer, _lexicon() if card.lexicon else ())
    return {"model": model, "card": card, "spans": spans, "unknown": unknown_words(spans)}


@lru_cache(maxsize=32)
def _source_tokenizer(folder: str, checkpoint_hash: str) -> Any:
    """One tokenizer per model folder and weights (the hash keys a retrained folder anew)."""
    from modelcore.tasks.knowledge import read_source_tokenizer

    return read_source_tokenizer(folder)


@lru_cache(maxsize=1)
def _lexicon() -> frozenset[str]:
    from modelcore.tasks.zh_en import lexicon_words

    return lexicon_words()
