"""Plain greedy decoding by full recomputation: every step runs the decoder over the whole prefix.

This is the slow path the lesson describes; modelcore.decoding adds the KV cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from modelcore.decoding.params import DecodeParams
from modelcore.masks import make_src_mask, make_tgt_mask
from modelcore.model import EncoderDecoder
from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID


def pad_batch(sequences: Sequence[Sequence[int]], device: torch.device | str = "cpu") -> Tensor:
    """Right-pad id lists into one (B, L) tensor."""
    longest = max(len(s) for s in sequences)
    batch = torch.full((len(sequences), longest), PAD_ID, dtype=torch.long)
    for i, seq in enumerate(sequences):
        batch[i, : len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
    return batch.to(device)


@torch.no_grad()
def greedy_decode(model: EncoderDecoder, src_ids: Tensor, max_len: int | None = None) -> list[list[int]]:
    """Most probable next token each step, for a batch of sources (B, S); ids without <bos>/<eos>."""
    src_mask = make_src_mask(src_ids)  # (B, 1, 1, S)
    memory = model.encode(src_ids, src_mask)
    max_len = max_len or DecodeParams().resolved_max_len(src_ids.size(1), model.config.max_len)
    B = src_ids.size(0)
    tgt = torch.full((B, 1), BOS_ID, dtype=torch.long, device=src_ids.device)  # (B, 1)
    finished = torch.zeros(B, dtype=torch.bool, device=src_ids.device)
    for _ in range(max_len):
        hidden = model.decode(memory, src_mask, tgt, make_tgt_mask(tgt))  # (B, t, d_model)
        next_id = model.generator(hidden[:, -1]).argmax(-1)  # (B,)
        next_id = next_id.masked_fill(finished, PAD_ID)
        tgt = torch.cat([tgt, next_id[:, None]], dim=1)
        finished |= next_id == EOS_ID
        if finished.all():
            break
    return [_strip(row) for row in tgt[:, 1:].tolist()]


def _strip(ids: list[int]) -> list[int]:
    return ids[: ids.index(EOS_ID)] if EOS_ID in ids else [i for i in ids if i != PAD_ID]
