"""The offline-horizon harness on a tiny random target with random drafts: what each method keeps."""

from __future__ import annotations

import pytest
import torch

from drafts.bench import cli
from drafts.bench.offline_continuation import DraftContinuer, TargetContinuer
from drafts.bench.offline_horizon import HorizonConfig, commit, reference_answer, run_offline_horizon
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.factory import KINDS
from drafts.target.activations import Activations
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import FakeTokenizer, random_tokens

PROMPTS = [random_tokens(10, seed=31), random_tokens(7, seed=32)]
CONFIG = HorizonConfig(("target",), horizons=(3, 6), cuts=(2, 5))


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=4))


def draft_continuer(runner: TargetRunner, kind: str, seed: int = 1) -> DraftContinuer:
    return DraftContinuer(NeuralDrafter(random_draft(kind, runner, seed=seed)))


class ErringAt:
    """The target continuing itself, but with a wrong token at ``depth`` (0-based): keeps ``depth``."""

    needs = TargetContinuer.needs

    def __init__(self, runner: TargetRunner, depth: int) -> None:
        self.target = TargetContinuer(runner)
        self.name = f"errs-at-{depth}"
        self.depth = depth
        self.vocab = int(runner.config.vocab_size)

    def begin(self, prompt: list[int]) -> None:
        self.target.begin(prompt)

    def observe(self, committed: list[int], acts: Activations) -> None:
        self.target.observe(committed, acts)

    def continue_after(self, context: list[int], horizon: int) -> list[int]:
        tokens = self.target.continue_after(context, horizon)
        tokens[self.depth] = (tokens[self.depth] + 1) % self.vocab
        return tokens

    def close(self) -> None:
        pass


def test_the_target_continuing_itself_keeps_every_token_at_every_horizon(runner: TargetRunner) -> None:
    run = run_offline_horizon(runner, PROMPTS, [TargetContinuer(runner)], CONFIG)

    target = run.to_json()["methods"]["target"]["offline"]
    assert target["samples"] == len(PROMPTS) * len(CONFIG.cuts)
    assert target["fraction"] == {"3": 1.0, "6": 1.0}
    assert target["survival_by_depth"] == [1.0] * 6
    assert [row["cut"] for row in run.samples] == [2, 5, 2, 5]


def test_a_continuation_wrong_at_depth_k_keeps_exactly_k_tokens(runner: TargetRunner) -> None:
    run = run_offline_horizon(runner, PROMPTS, [ErringAt(runner, 4), ErringAt(runner, 0)], CONFIG)

    methods = run.to_json()["methods"]
    assert methods["errs-at-4"]["offline"]["kept"] == {"3": 3.0, "6": 4.0}
    assert methods["errs-at-4"]["offline"]["distribution"] == [0, 0, 0, 0, 4, 0, 0]
    assert methods["errs-at-0"]["offline"]["kept"] == {"3": 0.0, "6": 0.0}
    assert all(row["kept"] == {"errs-at-4": 4, "errs-at-0": 0} for row in run.samples)


def test_with_re_sync_a_swapped_token_loses_only_itself(runner: TargetRunner) -> None:
    """The tail after the wrong token is proposed below the target's correction, and kept; with the default
    rule's 8 lookup nodes shared by six re-join points, a long tail comes back in short chains, each followed
    by the target's own token (errs-at-0, horizon 6: 4 of the 5 after the wrong one)."""
    run = run_offline_horizon(runner, PROMPTS, [ErringAt(runner, 4), ErringAt(runner, 0)], CONFIG)

    methods = run.to_json()["methods"]
    assert methods["errs-at-4"]["offline_resync"]["kept"] == {"3": 3.0, "6": 5.0}
    assert methods["errs-at-0"]["offline_resync"]["kept"] == {"3": 2.0, "6": 4.0}
    assert all(row["kept_resync"] == {"errs-at-4": 5, "errs-at-0": 4} for row in run.samples)
    row = run.samples[0]
    assert row["offline"]["errs-at-4"][:4] == row["reference"][:4] != row["offline"]["errs-at-4"][:5]
    assert len(row["reference"]) == 6 + 32  # the re-sync reference runs past the horizon


@pytest.mark.parametrize("kind", KINDS)
def test_a_draft_writes_offline_one_step_per_token_from_the_root_as_the_engine_drives_it(
    runner: TargetRunner, kind: str
) -> None:
    context = PROMPTS[0] + reference_answer(runner, PROMPTS[0], 5)
    continuer = draft_continuer(runner, kind)
    session = runner.new_session()
    continuer.begin(PROMPTS[0])
    for piece in (context[:10], context[10:-1]):  # a prefill, then a verified round
        continuer.observe(piece, commit(runner, session, piece, continuer.needs))

    offline = continuer.continue_after(context, 6)

    assert offline == step_by_step(continuer, root=context[-1], position=len(context) - 1, count=6)


@torch.inference_mode()
def step_by_step(continuer: DraftContinuer, root: int, position: int, count: int) -> list[int]:
    """The draft's greedy chain, one ``step`` per token: the root at ``position``, token i at ``position + 1 + i``."""
    assert isinstance(continuer.drafter, NeuralDrafter)
    model, tokens, token = continuer.drafter.model, [], root
    state = model.initial_state()
    for i in range(count):
        logits, state = model.step(torch.tensor([token]), torch.tensor([position + i]), None, state)
        token = int(model.parts.d2t[int(logits[0].argmax())])
        tokens.append(token)
    model.end_round()
    return tokens


@pytest.mark.parametrize("kind", KINDS)
def test_with_the_target_state_each_token_is_drafted_after_the_target_committed_all_before_it(
    runner: TargetRunner, kind: str
) -> None:
    prompt = PROMPTS[1]
    answer = reference_answer(runner, prompt, 8)
    context, after = prompt + answer[:3], answer[3:8]
    continuer, fresh = draft_continuer(runner, kind), draft_continuer(runner, kind)
    session = runner.new_session()
    continuer.begin(prompt)
    continuer.observe(context[:-1], commit(runner, session, context[:-1], continuer.needs))
    offline = continuer.continue_after(context, len(after))
    acts = commit(runner, session, [context[-1], *after[:-1]], continuer.needs)

    tokens = continuer.with_target_state(context, after, acts)

    longest = context + after[:-1]  # the last token's own fresh draft: it saw every token before it
    fresh.begin(prompt)
    fresh.observe(longest[:-1], commit(runner, runner.new_session(), longest[:-1], fresh.needs))
    assert tokens[-1] == fresh.continue_after(longest, 1)[0]
    assert tokens[0] == offline[0]  # depth 1 has the target state either way
    assert continuer.observed == len(context) - 1  # cut back to where it was
    assert continuer.continue_after(context, len(after)) == offline


def test_every_draft_keeps_as_much_at_depth_one_with_or_without_the_target_state(runner: TargetRunner) -> None:
    continuers = [TargetContinuer(runner), *(draft_continuer(runner, kind) for kind in KINDS)]
    config = HorizonConfig(("target", *KINDS), horizons=(2, 4), cuts=(1, 3))

    methods = run_offline_horizon(runner, PROMPTS, continuers, config).to_json()["methods"]

    assert methods["target"]["offline"]["fraction"]["4"] == 1.0
    assert methods["target"]["with_target_state"] is None
    for kind in KINDS:
        offline, fresh = methods[kind]["offline"], methods[kind]["with_target_state"]
        assert offline["samples"] == fresh["samples"] == 4
        assert offline["survival_by_depth"][0] == fresh["survival_by_depth"][0]
        tokens = methods[kind]["with_target_tokens"]
        assert tokens["distribution"] == offline["distribution"]  # the same chain until its first miss
        assert tokens["token_accuracy_by_depth"][0] == offline["survival_by_depth"][0]
        assert methods[kind]["ms_per_offline_token"] > 0


@pytest.mark.parametrize("kind", KINDS)
def test_fed_the_target_tokens_a_draft_predicts_its_own_chain_until_the_first_miss(
    runner: TargetRunner, kind: str
) -> None:
    context = PROMPTS[0] + reference_answer(runner, PROMPTS[0], 4)
    continuer = draft_continuer(runner, kind, seed=2)
    continuer.begin(PROMPTS[0])
    continuer.observe(context[:-1], commit(runner, runner.new_session(), context[:-1], continuer.needs))
    offline = continuer.continue_after(context, 6)
    miss = 2  # the "target" continuation: the draft's own chain, then other tokens from depth 3 on
    target = offline[:miss] + [(t + 1) % 64 for t in offline[miss:]]

    forced = continuer.with_target_tokens(context, target)

    assert forced[: miss + 1] == offline[: miss + 1]  # up to and including the first miss: the same chain
    assert forced[miss + 1 :] == step_by_step_through(continuer, context, target)[miss + 1 :]
    assert continuer.continue_after(context, 6) == offline  # the diagnostic left no scratch behind


@torch.inference_mode()
def step_by_step_through(continuer: DraftContinuer, context: list[int], chain: list[int]) -> list[int]:
    """The draft's first choice after each token of [root, *chain[:-1]], stepped one at a time."""
    assert isinstance(continuer.drafter, NeuralDrafter)
    model, position = continuer.drafter.model, len(context) - 1
    state, out = model.initial_state(), []
    for i, token in enumerate([context[-1], *chain[:-1]]):
        logits, state = model.step(torch.tensor([token]), torch.tensor([position + i]), None, state)
        out.append(int(model.parts.d2t[int(logits[0].argmax())]))
    model.end_round()
    return out


def test_a_cut_is_skipped_where_the_answer_ends_before_the_horizon(runner: TargetRunner) -> None:
    answer = reference_answer(runner, PROMPTS[0], 8)
    stop = answer[3]  # the same model with this as its stop token ends the answer by its 4th token
    stopping = tiny_target_runner(runner.model, FakeTokenizer(eos_token_id=stop))

    run = run_offline_horizon(
        stopping, PROMPTS[:1], [TargetContinuer(stopping)], HorizonConfig(("target",), (2,), (1, 5))
    )

    ended = answer.index(stop)
    assert [row["cut"] for row in run.samples] == ([1] if ended >= 3 else [])
    assert {"prompt": 0, "cut": 5, "answer_tokens": ended} in run.skipped_cuts


def test_moa_bench_hands_offline_horizon_runs_to_the_offline_bench_and_reports_bad_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["--offline-horizon", "8,x"]) == 2
    assert "--offline-horizon takes comma-separated integers" in capsys.readouterr().err
    assert cli.main(["--offline-horizon=8", "--cuts", "0"]) == 2
    assert "--cuts takes positive answer positions" in capsys.readouterr().err
    assert cli.main(["--offline-horizon", "8", "--method", "nonesuch"]) == 2
    assert "unknown method 'nonesuch'" in capsys.readouterr().err
