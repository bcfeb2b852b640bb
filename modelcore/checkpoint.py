"""Model folders: config.json, model.safetensors, tokenizer.json, metrics.json (+ training state).

Loading never unpickles: weights and tensors come from safetensors, the rest
from JSON. Each file is written to a temporary name, then moved into place
with os.replace, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from safetensors.torch import load_model as load_weights
from safetensors.torch import save_model as save_weights

from modelcore.config import ModelConfig
from modelcore.device import resolve_device
from modelcore.model import EncoderDecoder
from modelcore.tokenization import Tokenizer

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, METRICS_FILE = (
    "config.json", "model.safetensors", "tokenizer.json", "metrics.json"
)
STATE_TENSORS_FILE, STATE_JSON_FILE = "train_state.safetensors", "train_state.json"


class CheckpointError(ValueError):
    """A model folder that is missing, incomplete or unreadable."""


@dataclass
class LoadedModel:
    """A model ready to use, with what it was saved with."""

    model: EncoderDecoder
    config: ModelConfig
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    metrics: dict[str, Any] = field(default_factory=dict)
    path: Path = Path()
    checkpoint_hash: str = ""  # sha256 of model.safetensors: changes exactly when the weights do


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


def _write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the model from a web process running as another user
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    _write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _read_json(path: Path) -> Any:
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


def save_model(
    directory: str | Path,
    model: EncoderDecoder,
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    metrics: dict[str, Any] | None = None,
) -> Path:
    """Write the model folder (weights in the model's own dtype, float32 when trained here); returns its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _write_json(directory / CONFIG_FILE, model.config.to_dict())
    tokenizers = {"source": json.loads(src_tokenizer.to_str()), "target": json.loads(tgt_tokenizer.to_str())}
    _write_json(directory / TOKENIZER_FILE, tokenizers)
    _write_atomically(
        directory / WEIGHTS_FILE, lambda tmp: save_weights(model, str(tmp), metadata={"format": "pt"})
    )
    if metrics is not None:
        _write_json(directory / METRICS_FILE, metrics)
    return directory


def load_model(name_or_dir: str | Path, device: str | torch.device | None = "cpu") -> LoadedModel:
    """Read a model folder or a shipped model by name, in eval mode on `device`."""
    path = resolve_model_path(name_or_dir)
    try:
        config = ModelConfig.from_dict(_read_json(path / CONFIG_FILE))
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{path / CONFIG_FILE}: {error}") from None
    tokenizers = _read_json(path / TOKENIZER_FILE)
    try:
        src_tokenizer = Tokenizer.from_str(json.dumps(tokenizers["source"]))
        tgt_tokenizer = Tokenizer.from_str(json.dumps(tokenizers["target"]))
    except Exception as error:  # a foreign tokenizer JSON raises from deep inside `tokenizers`
        raise CheckpointError(f"{path / TOKENIZER_FILE}: {error}") from None
    weights = path / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{path} has no {WEIGHTS_FILE}")
    device = device if isinstance(device, torch.device) else resolve_device(device)
    model = EncoderDecoder(config)
    try:
        load_weights(model, str(weights), strict=True)
    except Exception as error:  # safetensors raises several kinds for a truncated or foreign file
        raise CheckpointError(f"{weights}: {error}") from None
    metrics = _read_json(path / METRICS_FILE) if (path / METRICS_FILE).is_file() else {}
    return LoadedModel(
        model=model.to(device).eval(),
        config=config,
        src_tokenizer=src_tokenizer,
        tgt_tokenizer=tgt_tokenizer,
        metrics=metrics,
        path=path,
        checkpoint_hash=file_hash(weights),
    )


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
    config = _read_json(directory / CONFIG_FILE)
    metrics = _read_json(directory / METRICS_FILE) if (directory / METRICS_FILE).is_file() else {}
    for name, data in ((CONFIG_FILE, config), (METRICS_FILE, metrics)):
        if not isinstance(data, dict):
            raise CheckpointError(f"{directory / name} must hold a JSON object")
    size = sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    return FolderSummary(config, metrics, file_hash(weights), size)


def save_train_state(
    directory: Path, optimizer: torch.optim.Optimizer, state: dict[str, Any], model: torch.nn.Module | None = None
) -> None:
    """Optimizer moments, RNG states and a copy of the weights (safetensors), then the JSON that commits them."""
    # A crash can stop a checkpoint between any two files. So the tensors go to a new file named by its step,
    # the JSON (replaced atomically, last) names it, and only then is the previous one removed: whenever the
    # process dies, train_state.json names one complete set, weights included (model.safetensors may by then
    # hold the next checkpoint's weights).
    opt = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    for index, param_state in opt["state"].items():
        for key, value in param_state.items():
            tensors[f"optimizer.{index}.{key}"] = torch.as_tensor(value).detach().cpu().contiguous()
    if model is not None:  # copies: tied embeddings share storage, which save_file refuses
        tensors.update({f"model.{k}": v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items()})
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    name = f"train_state-{state.get('step', 0)}.safetensors"
    _write_atomically(directory / name, lambda tmp: save_file(tensors, str(tmp)))
    payload = {**state, "param_groups": opt["param_groups"], "tensors_file": name,
               "tensors_sha256": file_hash(directory / name)}
    if model is None:  # the weights are only in model.safetensors: tie them to this state
        payload["weights_sha256"] = file_hash(directory / WEIGHTS_FILE)
    _write_json(directory / STATE_JSON_FILE, payload)
    for old in directory.glob("train_state*.safetensors"):
        if old.name != name:
            old.unlink(missing_ok=True)


def has_train_state(directory: str | Path) -> bool:
    """Whether a folder holds a resumable training state."""
    return (Path(directory) / STATE_JSON_FILE).is_file()


def train_state_step(directory: str | Path) -> int | None:
    """The step of the resumable training state in a folder; None when there is none (or it is unreadable)."""
    try:
        return int(_read_json(Path(directory) / STATE_JSON_FILE)["step"])
    except (CheckpointError, KeyError, TypeError, ValueError):
        return None


def load_train_state(
    directory: Path, optimizer: torch.optim.Optimizer, model: torch.nn.Module | None = None
) -> dict[str, Any]:
    """Restore the optimizer, the RNG states and (when saved with them) the weights; returns the JSON part."""
    state = _read_json(directory / STATE_JSON_FILE)
    tensors_path = directory / state.get("tensors_file", STATE_TENSORS_FILE)
    if not tensors_path.is_file() or state.get("tensors_sha256") != file_hash(tensors_path):
        raise CheckpointError(f"{directory}: the training state's tensors are missing or changed (interrupted write?)")
    if "weights_sha256" in state and state["weights_sha256"] != file_hash(directory / WEIGHTS_FILE):
        raise CheckpointError(f"{directory}: training state does not match the saved weights (interrupted write?)")
    tensors = load_file(str(tensors_path))
    weights = {name[len("model."):]: value for name, value in tensors.items() if name.startswith("model.")}
    if weights:
        if model is None:
            raise CheckpointError(f"{directory}: this training state holds the weights; pass the model to restore them")
        model.load_state_dict(weights, strict=True)
    per_param: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        if name.startswith("optimizer."):
            _, index, key = name.split(".", 2)
            per_param.setdefault(int(index), {})[key] = value
    optimizer.load_state_dict({"state": per_param, "param_groups": state["param_groups"]})
    torch.set_rng_state(tensors["rng.torch"])
    if "rng.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.cuda"])
    return state


def remove_train_state(directory: str | Path) -> None:
    """Delete the resumable state of a finished run (it is about three times the model's size)."""
    directory = Path(directory)
    (directory / STATE_JSON_FILE).unlink(missing_ok=True)
    for path in directory.glob("train_state*.safetensors"):
        path.unlink(missing_ok=True)
