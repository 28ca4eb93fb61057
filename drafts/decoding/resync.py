"""Re-syncing offline text: the offline tokens after a rejection, kept as a lookup draft.

When the verifier rejects an offline token, the repair replaces the span from there; but the
offline text often follows the target's again a token later (a synonym, a skipped or an added
word). The tokens after the rejection (the *tail*) then serve as a lookup draft, as prompt lookup
decoding does with the prompt (Saxena 2023): below the newest committed token (the *root*)

- every tail position ``j`` (not spent yet) whose token is the root proposes the tail after ``j``
  as a chain (the text goes on from the same word);
- for ``hold`` rounds after the root replaced the tail's token at the cursor (a correction), the
  tail from the cursor + ``d`` is proposed too for each ``d`` in ``resume``: 1 one word swapped for
  another, 0 a word the target added (the replaced token comes next), 2 one word for two, ...;
  held, the target's own words may run a few tokens before the text re-joins.

All these chains form one trie (at most ``nodes`` tokens, each chain at most ``depth``; shared
prefixes merged; the nearest chain first, each to its end, or with ``levels`` every chain's first
token, then every second one, ...: the budget shared by the re-joins), grafted onto the draft's own tree
(:meth:`OfflineTail.grafted`), where every draft node whose token the tail holds gets the tail
after it below it too (the draft's path may pass the point where the text re-joins). Every
lookup token is a deterministic proposal (q = δ_x), so verifying it is lossless at any
temperature (:mod:`drafts.acceptance`). After the verify (:meth:`OfflineTail.advance`) the
tail tokens accepted are spent: never proposed again, and the cursor, where the nearest chains
start, moves past the last one (chains before it stay proposed: a far match spends only its own
tokens). A round that proposed lookup chains and kept none of them is a miss (a round with none
to propose costs nothing and is not); after ``patience`` misses in a row, or once the tail is
spent, the tail is dropped (:attr:`OfflineTail.live`).

Measured with lookup rounds alone (:func:`resync_greedy`; sharegpt-heldout, cuts 8/32/64, 32 offline
tokens, T = 0, the shipped MoA; s13 offline-resync): session 12's rule (32 nodes, patience 8, the
swap chain once, chains in turn) kept 5.31 of 32 on the tuning prompts 91-140; these defaults, the
best there among rules sending no more lookup tokens per sample (six resume points held 8 rounds,
8 nodes shared level by level, patience 32), 7.04; on the report prompts 141-199 (140 samples)
5.97 -> 8.34 (26 %), +2.36 [+1.84, +2.91] paired, with about the same lookup tokens (217 -> 220
per sample). More lookup tokens keep more (10.0 with 32 nodes, 8 resume points held 16 rounds, at
4.5x the tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from drafts.errors import ConfigError
from drafts.tree import DraftTree


@dataclass(frozen=True)
class ResyncConfig:
    """How much of the verifier's tree the lookup chains may take, and how long the tail lives."""

    # Defaults chosen on sharegpt-heldout prompts 91-140 (s13 offline-resync): the most offline tokens kept by
    # the MoA draft among rules sending no more lookup tokens per sample than session 12's (32, 32, 8, (1,), 1,
    # chains in turn): 5.31 -> 7.04 of 32 there.
    nodes: int = 8  # lookup tokens per round at most (the verifier's node limit also caps them)
    depth: int = 32  # tokens per lookup chain at most (the offline horizon: a whole span may follow)
    patience: int = 32  # rounds in a row with no tail token accepted before the tail is dropped
    resume: tuple[int, ...] = (0, 1, 2, 3, 4, 5)  # after a correction, chains from tail position cursor + d for each
    # d: 0 the target added a word before the replaced token, 1 swapped it, 2 (3, ...) wrote one for two (three)
    hold: int = 8  # rounds after a correction whose roots get the ``resume`` chains (the target's own words may
    # run a few tokens before the text re-joins the tail)
    levels: bool = True  # chains share the budget level by level (False: each chain to its end, nearest first)

    def __post_init__(self) -> None:
        if min(self.nodes, self.depth, self.patience, self.hold) < 1:
            raise ConfigError(f"resync nodes, depth, patience and hold must be >= 1, got {self}")
        if any(d < 0 for d in self.resume):
            raise ConfigError(f"resync resume offsets must be >= 0 (0: the replaced token itself), got {self.resume}")


@dataclass(frozen=True)
class Grafted:
    """A deterministic tree with the tail's chains grafted on, and the tail index of each node."""

    tree: DraftTree
    origin: tuple[int | None, ...]  # node i + 1 is the tail's token at origin[i] (None: the draft's own)
    added: int  # lookup nodes added to the draft's tree

    @property
    def size(self) -> int:
        return self.tree.size

    @property
    def proposes(self) -> bool:
        """Some node stands for a tail token (else a round with it is no miss)."""
        return any(index is not None for index in self.origin)


@dataclass
class OfflineTail:
    """The offline tokens left after a rejection; see the module docstring."""

    tokens: tuple[int, ...]  # tokens[0] is the rejected offline token
    config: ResyncConfig = field(default_factory=ResyncConfig)
    cursor: int = 0  # past the last tail token kept; a correction replaced tokens[cursor]
    since: int = 0  # rounds since that correction (0: the root is the target's token in place of tokens[cursor])
    misses: int = 0  # rounds in a row with no tail token accepted
    spent: set[int] = field(default_factory=set)  # tail indices kept (and 0, the rejected one, unless resumed at)

    def __post_init__(self) -> None:
        if 0 not in self.config.resume:
            self.spent.add(0)  # the rejected token comes back only as the text resuming at it (an added word)

    @property
    def live(self) -> bool:
        """Worth proposing: tokens left unspent, and not ``patience`` misses in a row."""
        return len(self.spent) < len(self.tokens) and self.misses < self.config.patience

    def starts(self, root: int, swap: bool = True) -> list[int]:
        """Tail indices ``j`` whose chains (the unspent tail after ``j``) go below ``root``, nearest first:
        within ``hold`` rounds of a correction the positions the text may resume at (``resume``; ``swap``:
        the root is the newest committed token), then every position holding ``root``, after the cursor,
        then before it."""
        n, rule = len(self.tokens), self.config
        found = [self.cursor + d - 1 for d in rule.resume] if swap and self.since < rule.hold else []
        found += [j for j in [*range(self.cursor, n), *range(self.cursor)] if self.tokens[j] == root]
        return [j for j in dict.fromkeys(found) if 0 <= j + 1 < n and j + 1 not in self.spent]

    def lookup(self, root: int, nodes: int | None = None) -> Grafted:
        """The trie of the chains below ``root`` alone."""
        return self.grafted(DraftTree.chain([]), root, nodes)

    def grafted(self, base: DraftTree, root: int, nodes: int | None = None) -> Grafted:
        """``base`` (the draft's deterministic tree) with the chains below ``root`` and below each of its
        nodes whose token the tail holds, at most ``nodes`` lookup tokens added (the config's by
        default): a token of both is one node; the lookup's come after ``base``'s, level by level (every
        chain's first token, then every second one, ...: a round tries several re-joins), nearest chain
        first within a level."""
        if base.q is not None or base.q_sparse is not None:
            raise ValueError("a tree with proposals q cannot take deterministic lookup nodes; send it without q")
        budget = self.config.nodes if nodes is None else min(nodes, self.config.nodes)
        tokens, parents = list(base.tokens), list(base.parents)
        origin: list[int | None] = [None] * len(tokens)
        anchors = [(0, self.starts(root))]
        anchors += [(i + 1, self.starts(t, swap=False)) for i, t in enumerate(base.tokens)]
        chains = [self._chain(j) for _, starts in anchors for j in starts]
        at: list[int | None] = [anchor for anchor, starts in anchors for _ in starts]  # each chain's last node
        levels, ids = range(self.config.depth), range(len(chains))
        order = [(c, n) for n in levels for c in ids] if self.config.levels else [(c, n) for c in ids for n in levels]
        for c, level in order:
            node, chain = at[c], chains[c]
            if node is None or level >= len(chain):
                continue
            i = chain[level]
            child = _child(tokens, parents, node, self.tokens[i])
            if child is None and len(tokens) - base.size < budget:
                tokens.append(self.tokens[i])
                parents.append(node)
                origin.append(None)
                child = len(tokens)
            if child is not None and origin[child - 1] is None:
                origin[child - 1] = i
            at[c] = child  # None: out of budget, the chain ends here
        return Grafted(DraftTree(tuple(tokens), tuple(parents)), tuple(origin), len(tokens) - base.size)

    def _chain(self, j: int) -> list[int]:
        """The tail indices after ``j``, at most ``depth``, up to the first spent one (each is kept once)."""
        out: list[int] = []
        for i in range(j + 1, min(j + 1 + self.config.depth, len(self.tokens))):
            if i in self.spent:
                break
            out.append(i)
        return out

    def advance(self, spent: Sequence[int], proposed: bool = True) -> int:
        """After a verify: ``spent`` are the tail indices of the accepted path's lookup tokens
        (:func:`spent_on`; empty: none); ``proposed`` False: the round had no lookup chain (no miss counted). Returns
        how many tail tokens were kept."""
        if spent:
            self.cursor, self.since, self.misses = spent[-1] + 1, 0, 0
            self.spent.update(spent)
        else:
            self.since, self.misses = self.since + 1, self.misses + proposed
        return len(spent)


def spent_on(path: Sequence[int], origin: Sequence[int | None]) -> list[int]:
    """The tail indices of the accepted ``path``'s (tree indices) lookup tokens, each past the one before."""
    out: list[int] = []
    for node in path:
        index = origin[node - 1]
        if index is not None and (not out or index > out[-1]):
            out.append(index)
    return out


@dataclass
class GreedyResync:
    """What lookup rounds alone did with one tail (:func:`resync_greedy`)."""

    kept: int = 0  # tail tokens kept (the bench's re-sync figure)
    rounds: int = 0  # rounds verified while the tail was live
    nodes: int = 0  # lookup tokens sent in them (what the verifier paid for the tail)


def resync_greedy(tail: OfflineTail, reference: Sequence[int], start: int) -> GreedyResync:
    """Lookup rounds alone at T = 0: the target's greedy ``reference`` committed from ``start`` on
    (``reference[start - 1]``, the correction, is the first root); each round verifies the lookup trie
    below the root and commits the accepted tokens and the target's next one."""
    out, p = GreedyResync(), start
    while tail.live and p < len(reference):
        lookup = tail.lookup(reference[p - 1])
        path = _greedy_path(lookup.tree, reference[p:])
        out.kept += tail.advance(spent_on(path, lookup.origin), lookup.proposes)
        out.rounds, out.nodes = out.rounds + 1, out.nodes + lookup.added
        p += len(path) + 1
    return out


def _greedy_path(tree: DraftTree, reference: Sequence[int]) -> list[int]:
    """The accepted path at T = 0 when the target's tokens are ``reference``."""
    node, path = 0, []
    for token in reference:
        child = tree.child_with(node, token)
        if child is None:
            break
        path.append(child)
        node = child
    return path


def _child(tokens: list[int], parents: list[int], node: int, token: int) -> int | None:
    """The tree index of ``node``'s child that is ``token``, if any, in a tree still being built
    (:meth:`DraftTree.child_with` once it is one)."""
    for i, (t, parent) in enumerate(zip(tokens, parents, strict=True)):
        if parent == node and t == token:
            return i + 1
    return None
