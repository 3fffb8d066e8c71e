"""Automatic prefix caching as vLLM does it, at the granularity the workload knows.

vLLM hashes every full KV block of a prompt as a chain (a block's hash covers its tokens and its
parent's hash), looks up the longest chain of cached blocks when it schedules a new request, skips
the prefill compute for those tokens, keeps blocks referenced while a request uses them and frees
unreferenced ones in LRU order only when their memory is needed. Here a request's prompt comes as
*units* (hash, tokens): a Mooncake trace's ``hash_ids`` (one per 512 tokens) or a synthetic
shared-prefix group (one unit of the prefix length). Chaining the unit hashes gives the same
longest-prefix semantics, and the work per request is one dictionary step per unit, not per token
or per 16-token block (the per-request cost the simulator promises).

Memory is shared as vLLM shares physical blocks: a cached unit's blocks are counted once, in
``referenced_blocks``, however many running requests hold it; a request owns privately only the
blocks beyond its cached units (the engine's ``_Seq.held`` / ``shared``). A hit therefore saves
prefill compute *and* KV capacity. Unreferenced units occupy blocks the engine counts as free, so
before each lookup they are evicted, least recently used first, down to the free block count.
"""
from __future__ import annotations

from collections import OrderedDict


def chain_keys(units: tuple[tuple[int, int], ...], block_size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(chained key, full KV blocks) per unit: key_i = hash((key_{i-1}, hash_i)); a partial block at a
    unit's end is not cacheable (vLLM caches full blocks only), so blocks = tokens // block_size."""
    keys, blocks = [], []
    key = 0
    for h, tokens in units:
        key = hash((key, h))
        keys.append(key)
        blocks.append(tokens // block_size)
    return tuple(keys), tuple(blocks)


class PrefixCache:
    """Reference-counted cached units with LRU eviction of the unreferenced ones."""

    def __init__(self) -> None:
        self.refs: dict[int, int] = {}  # key -> running requests holding it
        self.blocks: dict[int, int] = {}  # key -> KV blocks it covers
        self.lru: OrderedDict[int, int] = OrderedDict()  # unreferenced key -> blocks, oldest first
        self.unreferenced_blocks = 0
        self.referenced_blocks = 0  # blocks of units some request holds: counted once in the engine's usage
        self.queries = 0  # prompt tokens looked up (vllm:prefix_cache_queries)
        self.hits = 0  # of them, found cached (vllm:prefix_cache_hits)

    def evict_to(self, free_blocks: int) -> None:
        """Drop least recently used unreferenced units until they fit in ``free_blocks``."""
        while self.unreferenced_blocks > max(0, free_blocks) and self.lru:
            key, n = self.lru.popitem(last=False)
            self.unreferenced_blocks -= n
            del self.refs[key], self.blocks[key]

    def match(self, keys: tuple[int, ...], blocks: tuple[int, ...]) -> tuple[int, int, int]:
        """The longest cached prefix chain: (units, their blocks, of those the blocks no request holds
        now, which an admission takes out of the free count)."""
        n = hit = idle = 0
        refs = self.refs
        for k, b in zip(keys, blocks, strict=True):
            r = refs.get(k)
            if r is None:
                break
            n += 1
            hit += b
            if r == 0:
                idle += b
        return n, hit, idle

    def acquire(self, keys: tuple[int, ...], blocks: tuple[int, ...]) -> None:
        """A running request holds these units (inserting the ones not cached yet)."""
        for k, b in zip(keys, blocks, strict=True):
            r = self.refs.get(k)
            if r is None:
                self.refs[k], self.blocks[k] = 1, b
                self.referenced_blocks += b
            else:
                if r == 0:
                    self.unreferenced_blocks -= self.lru.pop(k)
                    self.referenced_blocks += self.blocks[k]
                self.refs[k] = r + 1

    def release(self, keys: tuple[int, ...]) -> None:
        """A request let go of these units: unreferenced ones become the most recently used."""
        for k in reversed(keys):  # the chain's tail is evicted before its head
            r = self.refs.get(k)
            if r is None:
                continue
            if r <= 1:
                self.refs[k] = 0
                self.lru[k] = self.blocks[k]
                self.unreferenced_blocks += self.blocks[k]
                self.referenced_blocks -= self.blocks[k]
            else:
                self.refs[k] = r - 1
