"""Model folders: saved and loaded exactly, never unpickled, refused clearly when broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from modelcore import EncoderDecoder, ModelConfig
from modelcore.checkpoint import CheckpointError, load_model, save_model
from modelcore.tokenization import Tokenizer


@pytest.fixture
def tokenizers() -> tuple[Tokenizer, Tokenizer]:
    return Tokenizer.train(["我爱猫", "猫吃鱼"], kind="char"), Tokenizer.train(["i love cats", "cats eat fish ."], kind="word")


def _model(src: Tokenizer, tgt: Tokenizer, **options) -> EncoderDecoder:
    torch.manual_seed(0)
    config = ModelConfig.from_preset("tiny", src_vocab_size=src.vocab_size, tgt_vocab_size=tgt.vocab_size, **options)
    return EncoderDecoder(config).eval()


@pytest.mark.parametrize("options", [{}, {"norm_position": "pre", "norm": "rmsnorm", "tie_embeddings": True}])
def test_round_trip_is_exact(tmp_path: Path, tokenizers, options) -> None:
    src_tok, tgt_tok = tokenizers
    model = _model(src_tok, tgt_tok, **options)
    save_model(tmp_path, model, src_tok, tgt_tok, metrics={"test": {"bleu": 12.5}})

    loaded = load_model(tmp_path)

    assert loaded.config == model.config
    assert loaded.metrics == {"test": {"bleu": 12.5}}
    assert not loaded.model.training
    for (name, saved), (_, restored) in zip(model.state_dict().items(), loaded.model.state_dict().items(), strict=True):
        assert torch.equal(saved, restored), name
    src, tgt = torch.tensor([src_tok.encode("猫吃鱼")]), torch.tensor([[1, *tgt_tok.encode("cats eat")]])
    assert torch.equal(loaded.model(src, tgt), model(src, tgt))
    assert loaded.src_tokenizer.encode("我爱鱼") == src_tok.encode("我爱鱼")
    assert loaded.tgt_tokenizer.decode(tgt_tok.encode("cats eat fish .")) == "cats eat fish ."
    if options.get("tie_embeddings"):
        assert loaded.model.generator.weight is loaded.model.tgt_embed.embedding.weight


def test_files_are_json_and_safetensors_only(tmp_path: Path, tokenizers) -> None:
    src_tok, tgt_tok = tokenizers
    save_model(tmp_path, _model(src_tok, tgt_tok), src_tok, tgt_tok, metrics={})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "config.json", "metrics.json", "model.safetensors", "tokenizer.json"
    ]
    assert json.loads((tmp_path / "config.json").read_text())["d_model"] == 64
    assert set(json.loads((tmp_path / "tokenizer.json").read_text())) == {"source", "target"}


def test_the_hash_changes_exactly_when_the_weights_do(tmp_path: Path, tokenizers) -> None:
    src_tok, tgt_tok = tokenizers
    model = _model(src_tok, tgt_tok)
    save_model(tmp_path / "a", model, src_tok, tgt_tok)
    save_model(tmp_path / "b", model, src_tok, tgt_tok)
    with torch.no_grad():
        model.generator.bias.add_(1.0)
    save_model(tmp_path / "c", model, src_tok, tgt_tok)
    a, b, c = (load_model(tmp_path / n).checkpoint_hash for n in "abc")
    assert a == b != c and len(a) == 64


def test_broken_folders_are_refused_with_a_clear_error(tmp_path: Path, tokenizers) -> None:
    src_tok, tgt_tok = tokenizers
    with pytest.raises(CheckpointError, match="no model folder"):
        load_model(tmp_path / "missing")
    save_model(tmp_path, _model(src_tok, tgt_tok), src_tok, tgt_tok)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text('{"d_model": 64}')
    with pytest.raises(CheckpointError, match="config.json"):
        load_model(tmp_path)


def test_no_pickle_is_involved() -> None:
    package = Path(__file__).resolve().parents[2] / "modelcore"
    source = "\n".join(p.read_text() for p in package.rglob("*.py"))
    assert "torch.load" not in source and "import pickle" not in source
