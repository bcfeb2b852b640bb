"""The lesson's demonstrations on the shipped zh-en model: what each computes, and that it is the model's own."""
from __future__ import annotations

import math

import pytest
import torch

from modelcore.checkpoint import load_model
from modelcore.lesson import DemoError, run_demo
from modelcore.masks import make_src_mask
from modelcore.model.instrument import record

SENTENCE = "我的猫追了一只老鼠。"


@pytest.fixture(scope="module")
def zh_en():
    return load_model("zh-en-post")


def test_one_attention_row_step_by_step_is_the_models_own_row(zh_en):
    result = run_demo("encoder", zh_en, {"sentence": SENTENCE, "layer": 1, "head": 2, "query": 2})
    row = result["row"]
    assert result["tokens"][2] == "猫" and len(row["scores"]) == len(result["tokens"]) == 11
    assert row["scaled"] == pytest.approx([s / math.sqrt(row["d_k"]) for s in row["scores"]], abs=1e-4)
    exp = [math.exp(s - max(row["scaled"])) for s in row["scaled"]]
    assert row["weights"] == pytest.approx([e / sum(exp) for e in exp], abs=1e-4)
    # The same weights the model computed in its own forward pass:
    src = torch.tensor([zh_en.src_tokenizer.source_ids(SENTENCE)])
    with record(zh_en.model) as rec:
        zh_en.model.encode(src, make_src_mask(src))
    assert row["weights"] == pytest.approx(rec.encoder_self[1][0, 2, 2].tolist(), abs=1e-4)
    assert result["attention"][2][2] == pytest.approx(row["weights"], abs=1e-3)


def test_the_encoder_sees_every_position_and_keeps_d_model(zh_en):
    result = run_demo("encoder", zh_en, {"sentence": SENTENCE})
    for head in result["attention"]:  # no masked triangle: bidirectional, queries look at later keys too
        assert sum(row[k] for q, row in enumerate(head) for k in range(q + 1, len(row))) > 0.5
    assert result["layer_shapes"] == [[11, 128]] * 3
    assert result["ffn"]["shapes"] == [[11, 128], [11, 256], [11, 128]] and len(result["ffn"]["hidden"]) == 256
    assert 0 < result["ffn"]["zero_fraction"] < 1


def test_the_positional_encoding_is_the_sinusoid(zh_en):
    positions = run_demo("encoder", zh_en, {"sentence": "猫"})["positions"]
    assert positions[0][:2] == [0.0, 1.0]  # sin(0), cos(0)
    assert positions[1][0] == pytest.approx(math.sin(1), abs=1e-3) and positions[1][1] == pytest.approx(math.cos(1), abs=1e-3)


def test_with_the_causal_mask_teacher_forcing_on_the_greedy_output_gives_it_back(zh_en):
    result = run_demo("decoder", zh_en, {"sentence": SENTENCE})
    assert result["output"].startswith("my cat chased a mouse")
    assert result["teacher_forced_matches"] is True
    assert result["teacher_forced"][: len(result["tgt_tokens"]) - 1] == result["tgt_tokens"][1:]
    masked = result["self_attention"][0]
    assert all(masked[q][k] == 0 for q in range(len(masked)) for k in range(q + 1, len(masked)))
    assert all(abs(sum(row) - 1) < 1e-3 for row in result["cross_attention"][0])


def test_padding_is_invisible_to_the_real_positions(zh_en):
    padding = run_demo("decoder", zh_en, {"sentence": SENTENCE, "partner": "猫追老鼠。"})["padding"]
    assert padding["mask"][1] == [1] * 6 + [0] * 5 and padding["shorter"] == 1
    assert all(row[6:] == [0.0] * 5 for row in padding["attention"])
    assert padding["max_difference"] < 1e-4


def test_without_residuals_the_positions_merge_rather_than_drift_ever_further(zh_en):
    result = run_demo("residual", zh_en, {"sentence": SENTENCE})
    with_res, without = (arm["layers"] for arm in result["arms"])
    assert without[-1]["spread"] < with_res[-1]["spread"]
    distances = [layer["mean_distance"] for layer in without]
    assert distances[-1] < 1.2 * distances[0]  # no steady growth after the first layer
    assert result["norm_parameters"] == ["weight", "bias"] and result["norm_buffers"] == []
    out = result["norm"]
    assert out["name"] == "encoder.layers.0.norm1" and len(out["in_mean"]) == len(out["tokens"]) == 11


def test_batchnorm_moves_with_the_batch_in_training_mode_only_and_layernorm_never(zh_en):
    result = run_demo("norms", zh_en, {"sentence": SENTENCE, "partner": "猫追老鼠。"})
    shift = result["batchnorm_shift"]
    assert min(shift["batch"]) > 0.1 and min(shift["batch_with_padding"]) > min(shift["batch"])
    assert max(shift["inference"]) == 0 == result["largest_shift"]["inference"]  # running averages: batch-blind
    assert max(result["layernorm_shift"]) < 1e-4 and result["largest_shift"]["layernorm"] < 1e-4
    # The two modes of BatchNorm disagree on the same token by a large part of its normalised length.
    assert all(gap > 0.3 * length for gap, length in zip(result["mode_gap"], result["normalised_norm"], strict=True))


def test_rmsnorm_is_fed_activations_whose_mean_shows_what_it_leaves_in(zh_en):
    result = run_demo("norms", zh_en, {"sentence": SENTENCE})
    # What the first norm reads, recomputed: the embeddings, the positions and the first self-attention (Post-LN).
    src = torch.tensor([zh_en.src_tokenizer.source_ids(SENTENCE)])
    layer = zh_en.model.encoder.layers[0]
    with torch.no_grad():
        x = zh_en.model.positional(zh_en.model.src_embed(src))
        read = x + layer._self_attention_block(x, make_src_mask(src))
    assert result["input"]["mean"] == pytest.approx(read[0].mean(-1).tolist(), abs=1e-3)
    assert all(abs(m) < 1e-3 for m in result["layernorm_out"]["mean"])
    assert max(result["rmsnorm_out"]["mean"]) > 0.2  # not a norm's output, whose mean would be 0 already


@pytest.mark.parametrize(("sentence", "code"), [("", "empty_source"), ("   ", "empty_source"), ("猫" * 61, "source_too_long"),
                                                ("ĀĀĀ", "unknown_tokens"), (None, "empty_source")])
def test_bad_sentences_are_refused_with_a_code(zh_en, sentence, code):
    with pytest.raises(DemoError) as error:
        run_demo("encoder", zh_en, {"sentence": sentence})
    assert error.value.code == code


def test_bad_choices_are_refused(zh_en):
    for params in ({"layer": 3}, {"head": -1}, {"query": 99}, {"layer": True}):
        with pytest.raises(DemoError) as error:
            run_demo("encoder", zh_en, {"sentence": SENTENCE, **params})
        assert error.value.code == "bad_choice"
    with pytest.raises(DemoError):
        run_demo("nope", zh_en, {"sentence": SENTENCE})


def test_the_same_input_gives_the_same_result_and_another_input_another(zh_en):
    one = run_demo("encoder", zh_en, {"sentence": SENTENCE})
    assert run_demo("encoder", zh_en, {"sentence": SENTENCE}) == one
    assert run_demo("encoder", zh_en, {"sentence": "三个聪明的女孩喝五瓶水。"})["attention"] != one["attention"]


def zero_shares(model: str) -> list[list[float]]:
    """The FFN's share of middle units at 0 after the ReLU, for each encoder layer and each token of SENTENCE."""
    loaded = load_model(model)
    n = len(run_demo("encoder", loaded, {"sentence": SENTENCE})["tokens"])
    return [[run_demo("encoder", loaded, {"sentence": SENTENCE, "layer": layer, "query": q})["ffn"]["zero_fraction"]
             for q in range(n)] for layer in range(loaded.config.n_encoder_layers)]


def test_the_exercise_quotes_the_ffn_zero_share_the_shipped_models_give():
    from tests.fixtures.lesson import in_both
    from webapp.lesson.content import EXERCISES

    post = zero_shares("zh-en-post")
    others = [sum(layer) / len(layer) for model in ("zh-en-pre", "zh-en-hsk") for layer in zero_shares(model)]
    low, high = min(min(layer) for layer in post), max(max(layer) for layer in post)
    means = [f"{sum(layer) / len(layer):.2f}" for layer in post]
    assert low > 0.5  # far more than half, as the answer says
    answer = in_both(next(e["a"] for e in EXERCISES["encoder"] if e["id"] == "encoder-3"))
    assert f"{low:.2f} to {high:.2f}" in answer["en"] and f"{low:.2f} 到 {high:.2f}" in answer["zh"]
    assert ", ".join(means) in answer["en"] and "、".join(means) in answer["zh"]
    assert f"{min(others):.2f} to {max(others):.2f}" in answer["en"]
    assert f"{min(others):.2f} 到 {max(others):.2f}" in answer["zh"]
    if high == 1:  # a token with every unit at 0: the FFN adds only b2
        assert "b₂" in answer["en"] and "b₂" in answer["zh"]


def test_the_batchnorm_exercise_answers_what_each_mode_does_with_another_sentence(zh_en):
    from tests.fixtures.lesson import in_both
    from webapp.lesson.content import EXERCISES

    one = run_demo("norms", zh_en, {"sentence": SENTENCE, "partner": "猫追老鼠。"})
    other = run_demo("norms", zh_en, {"sentence": "三个聪明的女孩喝五瓶水。", "partner": "猫追老鼠。"})
    assert one["batchnorm_shift"]["batch"][0] != other["batchnorm_shift"]["batch"][0]  # training mode moves
    for result in (one, other):  # inference mode and LayerNorm stay at 0; the two modes still disagree
        assert max(result["batchnorm_shift"]["inference"]) == 0 and max(result["layernorm_shift"]) < 1e-4
        assert min(result["mode_gap"]) > 1
    answer = in_both(next(e["a"] for e in EXERCISES["questions"] if e["id"] == "questions-1"))
    assert "in inference mode (running averages) it stays 0" in answer["en"] and "推理模式（滑动平均）下" in answer["zh"]
