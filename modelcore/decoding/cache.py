"""The KV cache: per decoder layer, self-attention keys/values grown in place and cross-attention ones kept.

Each row is one hypothesis being decoded (a request, or one beam of it). Self-attention
buffers are allocated once with room for the longest request and written one position
per step; cross-attention keys/values are computed once per source and only reordered.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class CacheInfo:
    """How big the cache is for some rows: positions held per layer and bytes used."""

    layers: int
    self_positions: int  # decoder self-attention keys/values held per layer (summed over the rows)
    cross_positions: int  # cross-attention keys/values held per layer (source positions, summed over the rows)
    bytes: int  # keys + values of every layer for those rows

    def to_dict(self) -> dict[str, int]:
        """Plain JSON-ready fields."""
        return {
            "layers": self.layers,
            "self_positions": self.self_positions,
            "cross_positions": self.cross_positions,
            "bytes": self.bytes,
        }


class KVCache:
    """Keys and values of every decoder layer for a set of rows that can grow, shrink and reorder."""

    def __init__(self, n_layers: int, n_heads: int, d_k: int, dtype: torch.dtype, device: torch.device) -> None:
        self.n_layers, self.n_heads, self.d_k = n_layers, n_heads, d_k
        self.dtype, self.device = dtype, device
        self.entry_bytes = 2 * n_heads * d_k * torch.empty((), dtype=dtype).element_size()  # one position's k + v
        self.rows = 0
        self.capacity_rows = 0
        self.capacity_len = 0
        self.lengths: list[int] = []  # positions written so far, per row
        self.src_lengths: list[int] = []  # real (unpadded) source length, per row
        self.self_k: list[Tensor] = []  # per layer (capacity_rows, h, capacity_len, d_k)
        self.self_v: list[Tensor] = []
        self.cross_k: list[Tensor] = []  # per layer (rows, h, S, d_k)
        self.cross_v: list[Tensor] = []
        self.src_mask: Tensor | None = None  # (rows, 1, 1, S), None when no row is padded
        self._row_k: list[Tensor] = []  # views self_k[l][:rows], refreshed when rows change
        self._row_v: list[Tensor] = []
        self._uniform: int | None = 0  # the common length when every row has the same one
        self._positions: Tensor | None = None  # lengths as a tensor, for rows of different lengths
        self._arange: Tensor = torch.empty(0)

    # -- size ---------------------------------------------------------------------------------------

    @property
    def uniform_length(self) -> int | None:
        """The length every row shares, or None when rows differ (continuous batching)."""
        return self._uniform


    def info(self, rows: range | list[int] | None = None) -> CacheInfo:
        """Positions and bytes used by the given rows (all rows by default)."""
        rows = range(self.rows) if rows is None else rows
        if len(rows) == 1:  # the common case, once per request per step
            self_positions, cross_positions = self.lengths[rows[0]], self.src_lengths[rows[0]]
        else:
            self_positions = sum(self.lengths[r] for r in rows)
            cross_positions = sum(self.src_lengths[r] for r in rows)
        used = (self_positions + cross_positions) * self.n_layers * self.entry_bytes
        return CacheInfo(self.n_layers, self_positions, cross_positions, used)

    def reserve(self, rows: int, length: int) -> None:
        """Make room for this many rows of this many positions (grows by doubling, keeps contents)."""
        if rows <= self.capacity_rows and length <= self.capacity_len:
            return
        new_rows = max(rows, min(2 * self.capacity_rows, rows + 64), 1)
        new_len = max(length, self.capacity_len)
        shape = (new_rows, self.n_heads, new_len, self.d_k)
        for store in (self.self_k, self.self_v):
            for layer in range(self.n_layers):
                buffer = torch.zeros(shape, dtype=self.dtype, device=self.device)
                if layer < len(store):
                    old = store[layer]
                    buffer[: old.size(0), :, : old.size(2)] = old
                    store[layer] = buffer
                else:
                    store.append(buffer)
        self.capacity_rows, self.capacity_len = new_rows, new_len
        self._arange = torch.arange(new_len, device=self.device)
        self._refresh_views()

    # -- rows ---------------------------------------------------------------------------------------

    def append_rows(self, cross_k: list[Tensor], cross_v: list[Tensor], src_lengths: list[int], length: int) -> None:
        """Add rows with empty self-attention and these cross keys/values (per layer (n, h, S, d_k))."""
        n = len(src_lengths)
        self.reserve(self.rows + n, length)
        S_new = cross_k[0].size(2)
        S_old = self.cross_k[0].size(2) if self.cross_k else 0
        S = max(S_new, S_old)
        if self.cross_k:
            self.cross_k = [torch.cat([_pad_source(old, S), _pad_source(new, S)]) for old, new in zip(
                self.cross_k, cross_k, strict=True)]
            self.cross_v = [torch.cat([_pad_source(old, S), _pad_source(new, S)]) for old, new in zip(
                self.cross_v, cross_v, strict=True)]
        else:
            self.cross_k, self.cross_v = list(cross_k), list(cross_v)
        self.rows += n
        self.lengths += [0] * n
        self.src_lengths += src_lengths
        self._rows_changed()

    def select(self, index: list[int]) -> None:
        """Keep the rows in `index`, in that order (repeats allowed: beams that share a parent)."""
        if index == list(range(self.rows)):
            return
        if not index:
            self.rows, self.lengths, self.src_lengths = 0, [], []
            self.cross_k, self.cross_v, self.src_mask = [], [], None
            self._rows_changed()
            return
        self.reserve(len(index), self.capacity_len)
        idx = torch.tensor(index, device=self.device)
        used = max(self.lengths[i] for i in index)
        n = len(index)
        for store in (self.self_k, self.self_v):
            for buffer in store:
                # index_select first: `buffer` is read and written, and rows may repeat or swap.
                buffer[:n, :, :used] = buffer[: self.rows, :, :used].index_select(0, idx)
        S = max(self.src_lengths[i] for i in index)  # drop source padding no kept row needs
        self.cross_k = [k.index_select(0, idx)[:, :, :S] for k in self.cross_k]
        self.cross_v = [v.index_select(0, idx)[:, :, :S] for v in self.cross_v]
        self.rows = n
        self.lengths = [self.lengths[i] for i in index]
        self.src_lengths = [self.src_lengths[i] for i in index]
        self._rows_changed()

    def _rows_changed(self) -> None:
        self._refresh_views()
        self._uniform = self.lengths[0] if self.lengths and min(self.lengths) == max(self.lengths) else None
        self._positions = None if self._uniform is not None else torch.tensor(self.lengths, device=self.device)
        S = max(self.src_lengths, default=0)
        if self.rows and min(self.src_lengths) < S:
            lengths = torch.tensor(self.src_lengths, device=self.device)
            self.src_mask = (torch.arange(S, device=self.device) < lengths[:, None])[:, None, None, :]
        else:
            self.src_mask = None
        self._row_index = torch.arange(self.rows, device=self.device)

    def _refresh_views(self) -> None:
        self._row_k = [k[: self.rows] for k in self.self_k]
        self._row_v = [v[: self.rows] for v in self.self_v]

    # -- one step -----------------------------------------------------------------------------------

    def positions(self) -> Tensor:
        """Each row's position this step (rows of different lengths only): (rows,)."""
        assert self._positions is not None
        return self._positions

    def self_mask(self) -> Tensor | None:
        """Which cached positions each row may attend to this step: (rows, 1, 1, T), None when all."""
        if self._uniform is not None:
            return None
        T = max(self.lengths) + 1
        return (self._arange[:T] <= self.positions()[:, None])[:, None, None, :]  # (B, 1, 1, T)

    def write(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store this step's k, v (B, h, 1, d_k) of one layer; return all cached keys, values (B, h, T, d_k)."""
        t = self._uniform
        if t is not None:  # narrow + copy_: the cheapest way to write in place, one dispatch each
            row_k, row_v = self._row_k[layer], self._row_v[layer]
            row_k.narrow(2, t, 1).copy_(k)
            row_v.narrow(2, t, 1).copy_(v)
            return row_k.narrow(2, 0, t + 1), row_v.narrow(2, 0, t + 1)
        positions = self.positions()
        row_k, row_v = self._row_k[layer], self._row_v[layer]
        row_k[self._row_index, :, positions] = k[:, :, 0]
        row_v[self._row_index, :, positions] = v[:, :, 0]
        T = max(self.lengths) + 1
        return row_k[:, :, :T], row_v[:, :, :T]

    def advance(self) -> None:
        """Every row has one more position (call once per step, after all layers wrote)."""
        self.lengths = [n + 1 for n in self.lengths]
        if self._uniform is not None:
            self._uniform += 1
        else:
            self._positions = self.positions() + 1


def _pad_source(x: Tensor, S: int) -> Tensor:
    """Zero-pad keys/values (n, h, S_x, d_k) to S positions; the source mask hides the padding."""
    if x.size(2) == S:
        return x
    return torch.nn.functional.pad(x, (0, 0, 0, S - x.size(2)))
