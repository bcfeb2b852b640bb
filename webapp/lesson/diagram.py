"""The overview's picture: boxes and lines placed from a model's configuration (the template only draws them)."""
from __future__ import annotations

from typing import Any

LAYER_GAP = 110  # vertical distance between two layers of a stack
ENCODER_X, DECODER_X, TOP = 20, 380, 36
SUBLAYER_H = 22


def diagram(config: dict[str, Any]) -> dict[str, Any]:
    """Encoder layers with two sublayers, decoder layers with three, and the memory line to every cross-attention."""
    n_enc, n_dec = config.get("n_encoder_layers", 0), config.get("n_decoder_layers", 0)
    encoder = [{"index": i + 1, "y": TOP + i * LAYER_GAP,
                "sublayers": [{"kind": kind, "y": TOP + i * LAYER_GAP + 24 + j * 28} for j, kind in enumerate(("self", "ffn"))]}
               for i in range(n_enc)]
    decoder = [{"index": i + 1, "y": TOP + i * LAYER_GAP,
                "sublayers": [{"kind": kind, "y": TOP + i * LAYER_GAP + 22 + j * 26}
                              for j, kind in enumerate(("masked", "cross", "ffn"))]}
               for i in range(n_dec)]
    memory_y = (encoder[-1]["sublayers"][-1]["y"] + SUBLAYER_H // 2) if encoder else TOP
    lines = [{"y": layer["sublayers"][1]["y"] + SUBLAYER_H // 2} for layer in decoder]
    height = TOP + max(n_enc, n_dec) * LAYER_GAP + 10
    return {"encoder": encoder, "decoder": decoder, "memory_y": memory_y, "lines": lines, "height": height,
            "encoder_x": ENCODER_X, "decoder_x": DECODER_X, "memory_x": ENCODER_X + 270}


def norm_names(config: dict[str, Any]) -> list[str]:
    """The model's norms in the order its forward pass meets them (the residual demonstration's choices)."""
    names = []
    for stack, count, per_layer in (("encoder", config.get("n_encoder_layers", 0), 2),
                                    ("decoder", config.get("n_decoder_layers", 0), 3)):
        names += [f"{stack}.layers.{i}.norm{j}" for i in range(count) for j in range(1, per_layer + 1)]
        if config.get("norm_position") == "pre":
            names.append(f"{stack}.norm")  # Pre-LN's final norm after the stack
    return names
