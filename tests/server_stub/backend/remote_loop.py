"""Driving a backend the way a remote client does: prefill all but the newest token, then verify rounds.

The newest prompt token is the first round's root, so the first Verify's next token is the first
generated token, exactly as plain decoding's prefill produces it.
"""

from __future__ import annotations

import random

import torch

from drafts.drafters.base import Drafter, DraftShape
from drafts.drafters.oracle import OracleDrafter
from drafts.protocol import Needs
from drafts.sampling import SamplingConfig
from drafts.target.activations import Activations
from drafts.tree import DraftTree
from server_stub.backend.base import PrefillOutcome, TargetBackend, VerifyJob, VerifyOutcome
from tests.tiny_targets import VOCAB

GREEDY = SamplingConfig()
SHAPE = DraftShape(gamma=4)
NOTHING = Needs()  # a draft that reads no target activations (prompt lookup)


def open_with_prompt(
    backend: TargetBackend, session_id: str, prompt: list[int], needs: Needs = NOTHING
) -> PrefillOutcome:
    backend.open(session_id, needs)
    return backend.prefill(session_id, prompt[:-1])


def verify_one(backend: TargetBackend, job: VerifyJob) -> VerifyOutcome:
    (result,) = backend.verify([job])
    assert isinstance(result, VerifyOutcome), result
    return result


def emitted(tree: DraftTree, outcome: VerifyOutcome) -> list[int]:
    """The tokens a round adds to the output: the accepted drafts, then the target's next token."""
    return [tree.tokens[i - 1] for i in outcome.acceptance.path] + [outcome.acceptance.next_token]


def committed_tokens(root: int, tree: DraftTree, outcome: VerifyOutcome) -> list[int]:
    """The tokens a round commits to the session: the root and the accepted drafts."""
    return [root, *(tree.tokens[i - 1] for i in outcome.acceptance.path)]


def decode(
    backend: TargetBackend,
    session_id: str,
    prompt: list[int],
    drafter: Drafter,
    max_new_tokens: int,
    sampling: SamplingConfig = GREEDY,
    needs: Needs = NOTHING,
) -> tuple[list[int], list[Activations]]:
    """Generate at least ``max_new_tokens`` through the backend (whole rounds; the caller cuts).

    Returns (new tokens, the vectors of every call in order): the session has committed the
    prompt and every new token but the last, which is the next round's root.
    """
    drafter.begin(prompt)
    vectors = [open_with_prompt(backend, session_id, prompt, needs).vectors]
    generator = torch.Generator().manual_seed(0)
    out: list[int] = []
    while len(out) < max_new_tokens:
        context = prompt + out
        tree = drafter.propose(context, SHAPE, sampling, generator)
        outcome = verify_one(backend, VerifyJob(session_id, context[-1], tree, sampling, generator))
        vectors.append(outcome.vectors)
        out += emitted(tree, outcome)
    return out, vectors


class CorruptingOracle(OracleDrafter):
    """The target's own continuation, usually with one token of each proposal replaced: partial acceptance."""

    name = "corrupting-oracle"

    def __init__(self, reference: list[int], seed: int = 0) -> None:
        super().__init__(reference)
        self.random = random.Random(seed)

    def propose(
        self, context: list[int], shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        tokens = list(super().propose(context, shape, cfg, generator).tokens)
        if tokens and self.random.random() < 0.7:
            k = self.random.randrange(len(tokens))
            tokens[k] = (tokens[k] + 1) % VOCAB
        return DraftTree.chain(tokens)
