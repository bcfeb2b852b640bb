"""A model folder's layout, read and written without torch: the file names, the shipped models, the summary a
registry keeps, atomic writes and the training state's bookkeeping. The web process reads folders with these;
modelcore.checkpoint loads and saves the model itself (and re-exports these names).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, METRICS_FILE = (
    "config.json", "model.safetensors", "tokenizer.json", "metrics.json"
)
STATE_TENSORS_FILE, STATE_JSON_FILE = "train_state.safetensors", "train_state.json"


class CheckpointError(ValueError):
    """A model folder that is missing, incomplete or unreadable."""


def shipped_models() -> list[str]:
    """Names of the models that ship with modelcore."""
    if not SHIPPED_DIR.is_dir():
        return []
    return sorted(p.name for p in SHIPPED_DIR.iterdir() if (p / WEIGHTS_FILE).is_file())


def resolve_model_path(name_or_dir: str | Path) -> Path:
    """A model folder, or a shipped model's name -> its folder; CheckpointError when there is none."""
    path = Path(name_or_dir)
    if (path / CONFIG_FILE).is_file():
        return path
    if isinstance(name_or_dir, str) and "/" not in name_or_dir and (SHIPPED_DIR / name_or_dir / CONFIG_FILE).is_file():
        return SHIPPED_DIR / name_or_dir
    shipped = ", ".join(shipped_models()) or "none"
    raise CheckpointError(f"no model folder at {str(name_or_dir)!r} and no shipped model of that name (shipped: {shipped})")


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the model from a web process running as another user
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent} has no {path.name}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path} is not valid JSON: {error}") from None


def file_hash(path: Path) -> str:
    """sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class FolderSummary:
    """What a model registry keeps of a folder, read without loading the model."""

    config: dict[str, Any]
    metrics: dict[str, Any]  # {} when the folder has no metrics.json
    checkpoint_hash: str  # sha256 of model.safetensors
    size_bytes: int  # every file of the folder


def read_summary(directory: str | Path) -> FolderSummary:
    """The config, metrics, weights' hash and size of a model folder; CheckpointError when a file is missing."""
    directory = Path(directory)
    weights = directory / WEIGHTS_FILE
    for name in (WEIGHTS_FILE, CONFIG_FILE, TOKENIZER_FILE):
        if not (directory / name).is_file():
            raise CheckpointError(f"{name} is missing from {directory}")
    config = read_json(directory / CONFIG_FILE)
    metrics = read_json(directory / METRICS_FILE) if (directory / METRICS_FILE).is_file() else {}
    for name, data in ((CONFIG_FILE, config), (METRICS_FILE, metrics)):
        if not isinstance(data, dict):
            raise CheckpointError(f"{directory / name} must hold a JSON object")
    size = sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    return FolderSummary(config, metrics, file_hash(weights), size)


def has_train_state(directory: str | Path) -> bool:
    """Whether a folder holds a resumable training state."""
    return (Path(directory) / STATE_JSON_FILE).is_file()


def train_state_step(directory: str | Path) -> int | None:
    """The step of the resumable training state in a folder; None when there is none (or it is unreadable)."""
    try:
        return int(read_json(Path(directory) / STATE_JSON_FILE)["step"])
    except (CheckpointError, KeyError, TypeError, ValueError):
        return None


def remove_train_state(directory: str | Path) -> None:
    """Delete the resumable state of a finished run (it is about three times the model's size)."""
    directory = Path(directory)
    (directory / STATE_JSON_FILE).unlink(missing_ok=True)
    for path in directory.glob("train_state*.safetensors"):
        path.unlink(missing_ok=True)
