"""Parameter counts the overview quotes, against the built models; the paper's three-way tying of embeddings."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from modelcore import EncoderDecoder, ModelConfig
from modelcore.checkpoint import load_model, save_model, shipped_models
from modelcore.config import ConfigError
from modelcore.tokenization import Tokenizer
from webapp.lesson.content import PAPER_VOCAB, paper_parameters, parameter_count


def built(config: ModelConfig) -> int:
    """Trainable parameters of the model itself, each shared matrix once (on the meta device: no memory)."""
    with torch.device("meta"):
        model = EncoderDecoder(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("options", [{}, {"norm_position": "pre"}, {"norm": "rmsnorm", "norm_position": "pre"},
                                     {"tie_embeddings": True}, {"share_embeddings": True},
                                     {"tie_embeddings": True, "share_embeddings": True}])
def test_the_count_from_the_sizes_is_the_models(options):
    config = ModelConfig.from_preset("tiny", src_vocab_size=30, tgt_vocab_size=30, n_decoder_layers=3, **options)
    assert parameter_count(config.to_dict()) == built(config)


def test_the_papers_sizes_under_each_tying_are_the_models():
    rows = {row["tying"]: row["parameters"] for row in paper_parameters()}
    shared = {"src_vocab_size": PAPER_VOCAB, "tgt_vocab_size": PAPER_VOCAB}
    assert rows["none"] == built(ModelConfig.from_preset("paper", **shared))
    assert rows["output"] == built(ModelConfig.from_preset("paper", **shared, tie_embeddings=True))
    assert rows["all"] == built(ModelConfig.from_preset("paper", **shared, tie_embeddings=True, share_embeddings=True))
    assert round(rows["none"] / 1e6, 1) == 101.0 and round(rows["output"] / 1e6, 1) == 82.1
    assert abs(rows["all"] - 65e6) < 0.05 * 65e6  # three-way tying is what brings it near the paper's 65 M


@pytest.mark.parametrize("name", shipped_models())
def test_each_shipped_models_count_is_the_loaded_models(name):
    loaded = load_model(name)
    assert parameter_count(loaded.config.to_dict()) == sum(p.numel() for p in loaded.model.parameters())


def test_three_way_tying_is_one_matrix_and_survives_a_round_trip(tmp_path: Path):
    tokenizer = Tokenizer.train(["a b c d", "e f g"], kind="word")  # one vocabulary for both sides
    torch.manual_seed(0)
    config = ModelConfig.from_preset("tiny", src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size,
                                     tie_embeddings=True, share_embeddings=True)
    model = EncoderDecoder(config).eval()
    assert model.src_embed.embedding.weight is model.tgt_embed.embedding.weight is model.generator.weight
    loaded = load_model(save_model(tmp_path, model, tokenizer, tokenizer))
    again = loaded.model
    assert again.src_embed.embedding.weight is again.tgt_embed.embedding.weight is again.generator.weight
    assert torch.equal(again.src_embed.embedding.weight, model.src_embed.embedding.weight)


def test_sharing_the_source_embedding_needs_one_vocabulary():
    with pytest.raises(ConfigError) as error:
        ModelConfig.from_preset("tiny", src_vocab_size=30, tgt_vocab_size=40, share_embeddings=True)
    assert error.value.field == "share_embeddings" and error.value.code == "vocab"


def test_the_cli_doc_quotes_the_papers_counts_under_each_tying():
    doc = " ".join((Path(__file__).resolve().parents[3] / "docs/cli.md").read_text(encoding="utf-8").split())
    rows = {row["tying"]: f"{row['parameters'] / 1e6:.1f} M" for row in paper_parameters()}
    assert f"{rows['none']} parameters untied, {rows['output']} with `--tie-embeddings` and {rows['all']} with all" in doc
