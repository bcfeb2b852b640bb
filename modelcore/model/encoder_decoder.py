"""The whole encoder-decoder: embeddings, N encoder layers, N decoder layers, generator."""

from __future__ import annotations

from torch import Tensor, nn

from modelcore.config import ModelConfig
from modelcore.masks import make_src_mask, make_tgt_mask
from modelcore.model.embeddings import PositionalEncoding, TokenEmbedding
from modelcore.model.layers import DecoderLayer, EncoderLayer
from modelcore.model.norms import build_norm


class Encoder(nn.Module):
    """A stack of encoder layers; Pre-LN adds one final norm (the layers leave x unnormalised)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_encoder_layers))
        self.norm = build_norm(config) if config.norm_position == "pre" else nn.Identity()

    def forward(self, x: Tensor, src_mask: Tensor | None) -> Tensor:
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.norm(x)  # (B, S, d_model)


class Decoder(nn.Module):
    """A stack of decoder layers; Pre-LN adds one final norm."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_decoder_layers))
        self.norm = build_norm(config) if config.norm_position == "pre" else nn.Identity()

    def forward(self, x: Tensor, memory: Tensor, src_mask: Tensor | None, tgt_mask: Tensor | None) -> Tensor:
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)  # (B, T, d_model)


class EncoderDecoder(nn.Module):
    """The Transformer of Vaswani et al. 2017, with the norm position, norm and residual as switches."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.src_embed = TokenEmbedding(config.src_vocab_size, config.d_model)
        self.tgt_embed = TokenEmbedding(config.tgt_vocab_size, config.d_model)
        self.positional = PositionalEncoding(config.d_model, config.max_len, config.dropout)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)
        self._reset_parameters()
        if config.tie_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight
        if config.share_embeddings:  # a shared vocabulary: one id means one token on both sides
            self.src_embed.embedding.weight = self.tgt_embed.embedding.weight

    def _reset_parameters(self) -> None:
        # Xavier on every matrix, as torch.nn.Transformer and the annotated transformer do.
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def encode(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        """src ids (B, S) -> memory (B, S, d_model)."""
        return self.encoder(self.positional(self.src_embed(src)), src_mask)

    def decode(
        self, memory: Tensor, src_mask: Tensor | None, tgt: Tensor, tgt_mask: Tensor | None
    ) -> Tensor:
        """Target ids so far (B, T) and memory (B, S, d_model) -> hidden states (B, T, d_model)."""
        return self.decoder(self.positional(self.tgt_embed(tgt)), memory, src_mask, tgt_mask)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Teacher-forced logits (B, T, tgt_vocab_size) for src (B, S) and target input tgt (B, T)."""
        src_mask = make_src_mask(src)  # (B, 1, 1, S)
        tgt_mask = make_tgt_mask(tgt)  # (B, 1, T, T)
        memory = self.encode(src, src_mask)
        return self.generator(self.decode(memory, src_mask, tgt, tgt_mask))
