"""The draft's KV cache grows in place yet holds exactly what concatenation would."""

from __future__ import annotations

import torch

from drafts.nn.kv_cache import KVCache


def chunks(seed: int, sizes: list[int]) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 2, n, 4, generator=g) for n in sizes]


def test_appends_hold_the_concatenation_across_growths() -> None:
    cache = KVCache()
    ks, vs = chunks(0, [5, 1, 70, 1, 200]), chunks(1, [5, 1, 70, 1, 200])
    for i, (k, v) in enumerate(zip(ks, vs, strict=True)):
        keys, values = cache.append(k, v)
        assert torch.equal(keys, torch.cat(ks[: i + 1], dim=2))
        assert torch.equal(values, torch.cat(vs[: i + 1], dim=2))
    assert cache.length == 277 and torch.equal(cache.keys, keys)  # type: ignore[arg-type]


def test_a_truncated_cache_is_overwritten_by_the_next_append() -> None:
    cache = KVCache()
    (a, b, c) = chunks(2, [6, 3, 2])
    cache.append(a, a)
    cache.append(b, b)  # scratch tokens of a round
    cache.truncate(6)
    keys, _ = cache.append(c, c)

    assert torch.equal(keys, torch.cat([a, c], dim=2))


def test_an_empty_cache_has_no_keys_and_a_reset_forgets_everything() -> None:
    cache = KVCache()
    assert cache.keys is None and cache.length == 0
    cache.append(*chunks(3, [4, 4]))
    cache.reset()
    assert cache.keys is None and cache.values is None and cache.length == 0


def test_a_cache_filled_in_inference_mode_keeps_working_outside_it() -> None:
    cache = KVCache()
    a, b = chunks(4, [3, 2])
    with torch.inference_mode():
        cache.append(a, a)
    keys, _ = cache.append(b, b)

    assert torch.equal(keys, torch.cat([a, b], dim=2)) and not keys.is_inference()
