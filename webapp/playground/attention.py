"""Attention as the socket sends it: one view (a layer and a head, or the heads' mean), 8 bits per weight.

The page draws one decoder layer and one encoder layer at a time, for one head or the mean of
the heads, so a frame carries only that: every other layer and head stays in the worker's copy
of the request (and, once it ended, in Redis for a while), from which a `view` frame gets any
other. Each weight w (in [0, 1]) travels as the byte round(w * SCALE), base64-encoded: a client
reads it back as byte / SCALE, within half a step (1/510) of the model's own float. A token
frame's rows then cost about 4/3 byte per weight instead of the 6 to 20 characters of a JSON
number, and the `start` frame's encoder matrix 4/3 * S^2 bytes whatever the layers and heads
(docs/protocol.md, "Sizes").

Numpy only: the web process (views of ended requests) and the worker use the same code.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

SCALE = 255  # one byte per weight: w = byte / SCALE
MEAN = "mean"

# One decoding step's attention, as arrays (L, h, T) self and (L, h, S) cross; a beam step has one per beam.
StepRows = tuple[np.ndarray, np.ndarray]
Step = StepRows | list[StepRows]


@dataclass(frozen=True)
class View:
    """What the page shows: a decoder layer, an encoder layer and a head (None: the mean of the heads).

    A layer of None is the last one. Layers and heads past the model's are clamped to its last,
    so every view a client asks for has an answer; frames say which one they hold.
    """

    layer: int | None = None
    encoder_layer: int | None = None
    head: int | None = None

    def for_model(self, n_decoder_layers: int, n_encoder_layers: int, n_heads: int) -> View:
        """This view with every field a real index of this model (or None for the mean)."""
        def clamp(value: int | None, count: int) -> int:
            return count - 1 if value is None else min(value, count - 1)

        head = None if self.head is None else min(self.head, n_heads - 1)
        return View(clamp(self.layer, n_decoder_layers), clamp(self.encoder_layer, n_encoder_layers), head)

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "encoder_layer": self.encoder_layer,
                "head": MEAN if self.head is None else self.head}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> View:
        data = data or {}
        head = data.get("head", MEAN)
        return cls(data.get("layer"), data.get("encoder_layer"), None if head == MEAN else int(head))


def quantize(weights: np.ndarray) -> str:
    """Softmax weights (in [0, 1]) -> base64 of one byte each, round(w * SCALE), row-major.

    Adding a half and truncating rounds as rint does for these values, in a third of its time
    (this runs for every request at every step).
    """
    levels = (weights * SCALE + 0.5).astype(np.uint8)
    return base64.b64encode(levels.tobytes()).decode("ascii")


def dequantize(data: str, scale: int = SCALE) -> list[float]:
    """The inverse, for Python clients and tests: base64 -> the flat list of weights."""
    return [byte / scale for byte in base64.b64decode(data)]


def _pick(weights: np.ndarray, layer: int, head: int | None) -> np.ndarray:
    """(L, h, ...) -> that layer's head, or the mean of its heads."""
    heads = weights[layer]
    if head is None:
        return np.add.reduce(heads, axis=0) * (1.0 / heads.shape[0])  # the mean, without ndarray.mean's overhead
    return heads[head]


def step_attention(rows: StepRows, view: View) -> dict[str, Any]:
    """A step's rows in the view: `token.attention` (and each beam's)."""
    self_rows, cross_rows = rows
    assert view.layer is not None
    return {"layer": view.layer, "head": MEAN if view.head is None else view.head, "scale": SCALE,
            "self": quantize(_pick(self_rows, view.layer, view.head)),
            "cross": quantize(_pick(cross_rows, view.layer, view.head))}


def encoder_attention(encoder: np.ndarray, view: View) -> dict[str, Any]:
    """The encoder's (L, h, S, S) weights in the view: `start.encoder_attention`, S rows of S, row-major."""
    assert view.encoder_layer is not None
    matrix = _pick(encoder, view.encoder_layer, view.head)
    return {"layer": view.encoder_layer, "head": MEAN if view.head is None else view.head, "scale": SCALE,
            "size": int(matrix.shape[0]), "weights": quantize(matrix)}


def attention_frame(request_id: str, encoder: np.ndarray | None, steps: list[Step], view: View) -> dict[str, Any]:
    """The answer to `view`: the encoder matrix and every step so far, in the new view (steps in seq order)."""
    def one(step: Step) -> Any:
        return [step_attention(beam, view) for beam in step] if isinstance(step, list) else step_attention(step, view)

    frame: dict[str, Any] = {"type": "attention", "request_id": request_id, "view": view.to_dict(),
                             "steps": [one(step) for step in steps]}
    if encoder is not None:
        frame["encoder_attention"] = encoder_attention(encoder, view)
    return frame


# -- the copy kept after a request ended (Redis), from which `view` frames are answered ------------------


def pack(encoder: np.ndarray | None, steps: list[Step]) -> bytes:
    """Every layer and head of a request's attention, 8 bits per weight: a JSON header line, then the bytes.

    The mean of the heads taken from these bytes differs from the float one by at most half a
    step, and quantizing it again adds at most another half: a view of an ended request is
    within one step (1/255) of the model's weights.
    """
    arrays: list[np.ndarray] = [] if encoder is None else [encoder]
    layout: list[Any] = []
    for step in steps:
        beams = step if isinstance(step, list) else [step]
        layout.append(len(beams) if isinstance(step, list) else 0)
        for self_rows, cross_rows in beams:
            arrays += [self_rows, cross_rows]
    header = {"encoder": encoder is not None, "steps": layout, "shapes": [list(a.shape) for a in arrays]}
    body = b"".join(np.rint(np.clip(a, 0.0, 1.0) * SCALE).astype(np.uint8).tobytes() for a in arrays)
    return json.dumps(header).encode() + b"\n" + body


def unpack(blob: bytes) -> tuple[np.ndarray | None, list[Step]]:
    """pack()'s bytes -> the encoder's weights and the steps, as float arrays in [0, 1]."""
    line, body = blob.split(b"\n", 1)
    header = json.loads(line)
    arrays, offset = [], 0
    for shape in header["shapes"]:
        size = int(np.prod(shape))
        levels = np.frombuffer(body, dtype=np.uint8, count=size, offset=offset)
        arrays.append(levels.reshape(shape).astype(np.float32) / SCALE)
        offset += size
    encoder = arrays.pop(0) if header["encoder"] else None
    pairs = iter(zip(arrays[0::2], arrays[1::2], strict=True))
    steps: list[Step] = []
    for beams in header["steps"]:
        steps.append([next(pairs) for _ in range(beams)] if beams else next(pairs))
    return encoder, steps


def attention_frame_of_packed(request_id: str, blob: bytes, view: View) -> dict[str, Any]:
    """The answer to `view` for an ended request, from the copy its worker kept (pack())."""
    encoder, steps = unpack(blob)
    first = steps[0] if steps else None
    self_rows = (first[0] if isinstance(first, list) else first)[0] if first else None
    n_layers, n_heads = self_rows.shape[:2] if self_rows is not None else encoder.shape[:2]  # type: ignore[union-attr]
    n_encoder_layers = encoder.shape[0] if encoder is not None else n_layers
    return attention_frame(request_id, encoder, steps, view.for_model(n_layers, n_encoder_layers, n_heads))
