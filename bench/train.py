"""Training speed: modelcore's EncoderDecoder against torch.nn.Transformer of the same size, Post-LN and Pre-LN.

    .venv/bin/python bench/train.py [--repeats 7] [--steps 5] [--out bench/results/train.json]

Both sides run the same full training step: token embeddings scaled by sqrt(d_model), sinusoidal
positions, the encoder-decoder with source padding and causal target masks, the generator,
label-smoothed cross-entropy, backward, gradient clipping and an Adam step. Sizes: d_model 256,
4 heads, d_ff 1024, 3 + 3 layers, vocabulary 1000, batch 32, source and target length 32,
dropout 0.1, float32, CPU, 2 threads. Engines run interleaved, repeat after repeat, so that load
from other processes hits them alike; each figure is the median over repeats, in target tokens/s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import Tensor, nn  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modelcore import EncoderDecoder, ModelConfig  # noqa: E402
from modelcore.model.embeddings import PositionalEncoding, TokenEmbedding  # noqa: E402
from modelcore.tokenization import PAD_ID  # noqa: E402

THREADS = 2
SIZES = dict(d_model=256, n_heads=4, d_ff=1024, layers=3, vocab=1000, batch=32, src_len=32, tgt_len=32)
DROPOUT = 0.1


class TorchTransformer(nn.Module):
    """torch.nn.Transformer wrapped with the same embeddings, positions and generator as ours."""

    def __init__(self, norm_first: bool) -> None:
        super().__init__()
        d, V = SIZES["d_model"], SIZES["vocab"]
        self.src_embed, self.tgt_embed = TokenEmbedding(V, d), TokenEmbedding(V, d)
        self.positional = PositionalEncoding(d, 512, DROPOUT)
        self.transformer = nn.Transformer(
            d, SIZES["n_heads"], SIZES["layers"], SIZES["layers"], SIZES["d_ff"], DROPOUT,
            batch_first=True, norm_first=norm_first,
        )
        self.generator = nn.Linear(d, V)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool)
        src_pad, tgt_pad = src == PAD_ID, tgt == PAD_ID
        hidden = self.transformer(
            self.positional(self.src_embed(src)), self.positional(self.tgt_embed(tgt)),
            tgt_mask=causal, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
            memory_key_padding_mask=src_pad, tgt_is_causal=True,
        )
        return self.generator(hidden)


def ours(norm_position: str) -> nn.Module:
    V = SIZES["vocab"]
    return EncoderDecoder(ModelConfig(
        src_vocab_size=V, tgt_vocab_size=V, d_model=SIZES["d_model"], n_heads=SIZES["n_heads"],
        d_ff=SIZES["d_ff"], n_encoder_layers=SIZES["layers"], n_decoder_layers=SIZES["layers"],
        dropout=DROPOUT, norm_position=norm_position,
    ))


def batch(generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """Random ids with some right padding, as length bucketing leaves it."""
    B, S, T, V = SIZES["batch"], SIZES["src_len"], SIZES["tgt_len"], SIZES["vocab"]
    src = torch.randint(4, V, (B, S), generator=generator)
    tgt = torch.randint(4, V, (B, T + 1), generator=generator)
    for row in range(0, B, 4):
        src[row, S - 3 :] = PAD_ID
        tgt[row, T - 2 :] = PAD_ID
    return src, tgt[:, :-1], tgt[:, 1:]


def trainer(model: nn.Module) -> Callable[[tuple[Tensor, Tensor, Tensor]], int]:
    """One training step on a batch; returns the target tokens it trained on."""
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def step(data: tuple[Tensor, Tensor, Tensor]) -> int:
        src, tgt_in, tgt_out = data
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD_ID, label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return int((tgt_out != PAD_ID).sum())

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5, help="training steps per engine per repeat")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "train.json")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    engines = {
        f"{name}_{position}": trainer(build(position))
        for position in ("post", "pre")
        for name, build in (("modelcore", ours), ("torch", lambda p: TorchTransformer(p == "pre")))
    }
    data = [batch(torch.Generator().manual_seed(i)) for i in range(args.steps)]
    for step in engines.values():  # warm up allocators and kernels
        step(data[0])
    samples: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.repeats):
        for name, step in engines.items():
            started = time.perf_counter()
            tokens = sum(step(d) for d in data)
            samples[name].append(tokens / (time.perf_counter() - started))
    tokens_per_s = {name: statistics.median(v) for name, v in samples.items()}
    ratios = {p: tokens_per_s[f"modelcore_{p}"] / tokens_per_s[f"torch_{p}"] for p in ("post", "pre")}
    for name, value in tokens_per_s.items():
        print(f"{name:<16} {value:9.0f} target tokens/s")
    for position, ratio in ratios.items():
        print(f"{position}-LN: modelcore / torch.nn.Transformer = {ratio:.2f}x (goal >= 1.0x)")
    result = {
        "sizes": SIZES, "dropout": DROPOUT, "threads": THREADS, "repeats": args.repeats, "steps": args.steps,
        "tokens_per_s": tokens_per_s, "samples": samples, "ratio_modelcore_over_torch": ratios,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
                    "load_average": os.getloadavg()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
