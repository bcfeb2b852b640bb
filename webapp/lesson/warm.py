"""The models a worker keeps loaded for the lesson's demonstrations (the playground's warm-model cache)."""
from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from modelcore.checkpoint import LoadedModel
from webapp.playground.worker.warm import WarmModels


@lru_cache(maxsize=1)
def _models() -> WarmModels:
    return WarmModels(capacity=3, device=settings.MODELCORE_DEVICE)


def warm_model(path: str, checkpoint_hash: str) -> LoadedModel:
    return _models().get(path, checkpoint_hash)
