"""Model folders: config.json, model.safetensors, tokenizer.json, metrics.json (+ training state).

Loading never unpickles: weights and tensors come from safetensors, the rest
from JSON. Each file is written to a temporary name, then moved into place
with os.replace, so a reader never sees half a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from safetensors.torch import load_model as load_weights
from safetensors.torch import save_model as save_weights

from modelcore.config import ModelConfig
from modelcore.device import resolve_device
from modelcore.folder import (  # noqa: F401  (re-exported: the checkpoint API of docs/ and DESIGN.md)
    CONFIG_FILE,
    METRICS_FILE,
    SHIPPED_DIR,
    STATE_JSON_FILE,
    STATE_TENSORS_FILE,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    CheckpointError,
    FolderSummary,
    file_hash,
    has_train_state,
    read_json,
    read_summary,
    remove_train_state,
    resolve_model_path,
    shipped_models,
    train_state_step,
    write_atomically,
    write_json,
)
from modelcore.model import EncoderDecoder
from modelcore.tokenization import Tokenizer


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
    write_json(directory / CONFIG_FILE, model.config.to_dict())
    tokenizers = {"source": json.loads(src_tokenizer.to_str()), "target": json.loads(tgt_tokenizer.to_str())}
    write_json(directory / TOKENIZER_FILE, tokenizers)
    write_atomically(
        directory / WEIGHTS_FILE, lambda tmp: save_weights(model, str(tmp), metadata={"format": "pt"})
    )
    if metrics is not None:
        write_json(directory / METRICS_FILE, metrics)
    return directory


def load_model(name_or_dir: str | Path, device: str | torch.device | None = "cpu") -> LoadedModel:
    """Read a model folder or a shipped model by name, in eval mode on `device`."""
    path = resolve_model_path(name_or_dir)
    try:
        config = ModelConfig.from_dict(read_json(path / CONFIG_FILE))
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{path / CONFIG_FILE}: {error}") from None
    tokenizers = read_json(path / TOKENIZER_FILE)
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
    metrics = read_json(path / METRICS_FILE) if (path / METRICS_FILE).is_file() else {}
    return LoadedModel(
        model=model.to(device).eval(),
        config=config,
        src_tokenizer=src_tokenizer,
        tgt_tokenizer=tgt_tokenizer,
        metrics=metrics,
        path=path,
        checkpoint_hash=file_hash(weights),
    )


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
    write_atomically(directory / name, lambda tmp: save_file(tensors, str(tmp)))
    payload = {**state, "param_groups": opt["param_groups"], "tensors_file": name,
               "tensors_sha256": file_hash(directory / name)}
    if model is None:  # the weights are only in model.safetensors: tie them to this state
        payload["weights_sha256"] = file_hash(directory / WEIGHTS_FILE)
    write_json(directory / STATE_JSON_FILE, payload)
    for old in directory.glob("train_state*.safetensors"):
        if old.name != name:
            old.unlink(missing_ok=True)


def load_train_state(
    directory: Path, optimizer: torch.optim.Optimizer, model: torch.nn.Module | None = None
) -> dict[str, Any]:
    """Restore the optimizer, the RNG states and (when saved with them) the weights; returns the JSON part."""
    state = read_json(directory / STATE_JSON_FILE)
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


