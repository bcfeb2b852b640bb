"""Models kept loaded in a worker process, keyed by folder and checkpoint hash."""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from pathlib import Path

from modelcore.checkpoint import LoadedModel, load_model
from modelcore.decoding.confidence import judge_for

log = logging.getLogger(__name__)

ModelKey = tuple[str, str]  # (resolved folder, sha256 of model.safetensors)


class WarmModels:
    """At most `capacity` models, least recently used dropped first (running requests keep theirs)."""

    def __init__(self, capacity: int, device: str) -> None:
        self.capacity = capacity
        self.device = device
        self._models: OrderedDict[ModelKey, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, checkpoint_hash: str) -> LoadedModel:
        """The loaded model of this folder at this checkpoint, loading it on first use."""
        key = (str(Path(path).resolve()), checkpoint_hash)
        with self._lock:  # loading under the lock: two tasks asking at once load it once
            model = self._models.get(key)
            if model is None:
                model = load_model(path, device=self.device)
                # Its judge (calibration, training words: about a second) now, not in the first request's done.
                judge_for(folder=model.path, checkpoint_hash=model.checkpoint_hash, metrics=model.metrics)
                if checkpoint_hash and model.checkpoint_hash != checkpoint_hash:
                    log.warning("%s changed on disk since it was registered (re-register it)", path)
                self._models[key] = model
                while len(self._models) > self.capacity:
                    self._models.popitem(last=False)
            self._models.move_to_end(key)
            return model

    def keys(self) -> list[ModelKey]:
        with self._lock:
            return list(self._models)
