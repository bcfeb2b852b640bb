"""The KV cache keeps, reorders and repeats rows (beams sharing a parent) without mixing their keys and values."""

from __future__ import annotations

import torch

from modelcore.decoding import KVCache

LAYERS, HEADS, D_K = 2, 2, 3


def filled_cache(src_lengths: list[int], steps: int) -> KVCache:
    """Rows whose every cached value names them: row r, layer l, position t holds 100 r + 10 l + t (v: negated)."""
    cache = KVCache(LAYERS, HEADS, D_K, torch.float32, torch.device("cpu"))
    n, S = len(src_lengths), max(src_lengths)
    rows = torch.arange(n, dtype=torch.float32)[:, None, None, None]
    cross = [rows * 100 + 10 * layer + torch.zeros(n, HEADS, S, D_K) for layer in range(LAYERS)]
    cache.append_rows(cross, [-c for c in cross], src_lengths, steps + 2)
    for t in range(steps):
        for layer in range(LAYERS):
            k = (rows * 100 + 10 * layer + t).expand(n, HEADS, 1, D_K)
            cache.write(layer, k, -k)
        cache.advance()
    return cache


def row_values(cache: KVCache, layer: int) -> list[list[float]]:
    """Each row's cached keys, one number per position (head 0, first component)."""
    return [cache.self_k[layer][r, 0, : cache.lengths[r], 0].tolist() for r in range(cache.rows)]


def test_select_reorders_and_repeats_rows_with_their_keys_values_and_sources() -> None:
    cache = filled_cache([4, 2, 3], steps=3)
    cache.select([2, 0, 0])
    assert cache.rows == 3 and cache.lengths == [3, 3, 3] and cache.src_lengths == [3, 4, 4]
    for layer in range(LAYERS):
        assert row_values(cache, layer) == [[200 + 10 * layer + t for t in range(3)]] + [
            [10 * layer + t for t in range(3)]] * 2
        assert (cache.self_v[layer][:3, :, :3] == -cache.self_k[layer][:3, :, :3]).all()
        assert cache.cross_k[layer][:, 0, 0, 0].tolist() == [200 + 10 * layer, 10 * layer, 10 * layer]
    assert cache.cross_k[0].size(2) == 4  # still as long as the longest kept source


def test_repeated_rows_grow_apart_after_a_select() -> None:
    cache = filled_cache([3, 3], steps=2)
    cache.select([1, 1])
    for layer in range(LAYERS):  # the two copies of row 1 now take different tokens
        k = torch.tensor([7.0, 8.0])[:, None, None, None].expand(2, HEADS, 1, D_K)
        cache.write(layer, k, -k)
    cache.advance()
    assert row_values(cache, 0) == [[100, 101, 7], [100, 101, 8]]


def test_select_drops_source_padding_no_kept_row_needs_and_masks_the_rest() -> None:
    cache = filled_cache([5, 2, 3], steps=1)
    assert cache.src_mask is not None
    cache.select([1, 2])
    assert cache.cross_k[0].size(2) == 3 and cache.src_lengths == [2, 3]
    assert cache.src_mask is not None and cache.src_mask[:, 0, 0].tolist() == [[True, True, False], [True, True, True]]
    cache.select([1])
    assert cache.src_mask is None  # one row: nothing padded


def test_selecting_no_rows_empties_the_cache() -> None:
    cache = filled_cache([2, 3], steps=2)
    cache.select([])
    assert (cache.rows, cache.lengths, cache.cross_k) == (0, [], [])
    assert cache.info().bytes == 0
