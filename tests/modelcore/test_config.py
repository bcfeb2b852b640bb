"""ModelConfig is the one set of rules for a model's knobs: its errors name the field and how it is wrong."""
from __future__ import annotations

import pytest

from modelcore.config import ConfigError, ModelConfig, model_overrides
from modelcore.experiments import RunConfig
from modelcore.training import TrainConfig


@pytest.mark.parametrize(
    ("fields", "field", "code"),
    [
        ({"d_model": 30, "n_heads": 4}, "n_heads", "heads"),
        ({"n_encoder_layers": 0}, "n_encoder_layers", "integer"),
        ({"dropout": 1.0}, "dropout", "range"),
        ({"norm_position": "middle"}, "norm_position", "choice"),
        ({"residual": "yes"}, "residual", "bool"),
    ],
)
def test_a_bad_knob_names_its_field_and_how_it_is_wrong(fields, field, code):
    with pytest.raises(ConfigError) as caught:
        ModelConfig.check(**fields)
    assert (caught.value.field, caught.value.code) == (field, code)


def test_layers_set_both_stacks_and_an_unset_knob_keeps_the_preset():
    overrides = model_overrides(layers=3, d_model=32, norm=None, residual=False)
    assert overrides == {"n_encoder_layers": 3, "n_decoder_layers": 3, "d_model": 32, "residual": False}
    with pytest.raises(ValueError, match="unknown model config keys: heads"):
        model_overrides(heads=4)


def test_every_config_that_builds_a_model_refuses_what_the_model_refuses():
    for build in (lambda: TrainConfig(preset="tiny", model={"d_model": 30}),
                  lambda: RunConfig(d_model=30),
                  lambda: ModelConfig(src_vocab_size=9, tgt_vocab_size=9, d_model=30, n_heads=4)):
        with pytest.raises(ConfigError, match=r"d_model \(30\) must be divisible by n_heads \(4\)"):
            build()
