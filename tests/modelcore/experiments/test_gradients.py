"""Gradient norms by layer at initialisation: the trend Xiong et al. 2020 proved, and what residuals do."""
from __future__ import annotations

import pytest

from modelcore.config import ModelConfig
from modelcore.experiments import gradient_norms_at_init, series, torch_threads

SEEDS = (0, 1, 2)
SMALL_BATCH = {"batches": 1, "batch_size": 8, "src_len": 12, "tgt_len": 12}  # a third of the default work


@pytest.fixture(autouse=True)
def one_thread():
    with torch_threads(1):
        yield


def config(layers: int, **switches) -> ModelConfig:
    return ModelConfig(src_vocab_size=1000, tgt_vocab_size=1000, d_model=64, n_heads=4, d_ff=256,
                       n_encoder_layers=layers, n_decoder_layers=layers, dropout=0.0, **switches)



def test_it_answers_in_the_gradflow_json_shape():
    result = gradient_norms_at_init(config(2), seeds=(0,), batches=1)
    assert [(r["stack"], r["index"]) for r in result["layers"]] == [
        ("encoder", 0), ("encoder", 1), ("decoder", 0), ("decoder", 1)]
    encoder, decoder = result["layers"][0]["grad_norms"], result["layers"][2]["grad_norms"]
    assert {"self_attn", "ffn.linear1", "ffn.linear2", "norm1", "norm2", "layer"} <= set(encoder)
    assert "cross_attn" not in encoder and {"cross_attn", "norm3"} <= set(decoder)
    assert all(v > 0 for row in result["layers"] for v in row["grad_norms"].values())
    assert result["config"]["n_decoder_layers"] == 2 and result["seeds"] == [0]


def test_the_same_seeds_give_the_same_figures():
    first = gradient_norms_at_init(config(2), seeds=(3,), batches=1)
    again = gradient_norms_at_init(config(2), seeds=(3,), batches=1)
    assert first["layers"] == again["layers"]


@pytest.mark.slow
def test_post_ln_decoder_ffn_gradient_rises_to_the_last_layer_and_pre_ln_stays_flat():
    post = series(gradient_norms_at_init(config(6, norm_position="post"), seeds=SEEDS, **SMALL_BATCH),
                  "decoder", "ffn.linear2")
    pre = series(gradient_norms_at_init(config(6, norm_position="pre"), seeds=SEEDS, **SMALL_BATCH),
                 "decoder", "ffn.linear2")
    assert post[-1] > 3 * post[0], post  # measured: 4.5x to 7x
    assert all(later > earlier for earlier, later in zip(post, post[1:], strict=False)), post
    # Pre-LN: no growth towards the output (measured: a mild decline, e.g. 0.135 -> 0.071).
    assert pre[-1] < 1.2 * pre[0], pre
    assert max(pre) < 2.5 * min(pre), pre
    assert post[-1] / post[0] > 5 * (pre[-1] / pre[0])


@pytest.mark.slow
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_without_residuals_the_first_decoder_layer_gets_far_less_gradient_at_depth_12(norm_position):
    seeds = (0, 1)
    with_res = series(gradient_norms_at_init(config(12, norm_position=norm_position), seeds=seeds, **SMALL_BATCH),
                      "decoder", "layer")
    without = series(gradient_norms_at_init(config(12, norm_position=norm_position, residual=False), seeds=seeds,
                                            **SMALL_BATCH), "decoder", "layer")
    assert without[0] < with_res[0] / 10, (with_res[0], without[0])
    # The last layer still gets its share: the loss of gradient is on the way down, not everywhere.
    assert without[-1] > with_res[-1] / 10
