"""Running one method on one prompt: ar, transformers' generate, or a speculative drafter."""

from __future__ import annotations

import time

import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.generation import Generation
from drafts.decoding.speculative import generate
from drafts.drafters.registry import drafter_spec
from drafts.target.runner import TargetRunner

PLAIN_METHODS = ("ar", "generate")


def run_method(
    name: str, runner: TargetRunner, prompt: list[int], config: DecodeConfig, reference: list[int] | None
) -> Generation:
    """Generate with method ``name``; ``reference`` is ar's greedy output (oracle only)."""
    if name == "ar":
        return generate_autoregressive(runner, prompt, config)
    if name == "generate":
        return hf_generate(runner, prompt, config)
    spec = drafter_spec(name)
    return generate(runner, spec.build(runner, reference or []), prompt, config)


@torch.inference_mode()
def hf_generate(runner: TargetRunner, prompt: list[int], config: DecodeConfig) -> Generation:
    """transformers' own ``generate`` on the same model: the speed our ``ar`` must match."""
    ids = torch.tensor([prompt], device=runner.device)
    sampling = config.sampling
    kwargs = (
        {"do_sample": False}
        if sampling.greedy
        else {
            "do_sample": True,
            "temperature": sampling.temperature,
            "top_k": sampling.top_k or None,
            "top_p": sampling.top_p,
        }
    )
    t0 = time.perf_counter()
    out = runner.model.generate(  # type: ignore[operator]
        ids,
        max_new_tokens=config.max_new_tokens,
        eos_token_id=sorted(runner.stop_ids),
        pad_token_id=min(runner.stop_ids) if runner.stop_ids else None,
        **kwargs,
    )
    wall = time.perf_counter() - t0
    new = out[0, len(prompt) :].tolist()
    cut = next((i for i, t in enumerate(new) if t in runner.stop_ids), len(new))
    gen = Generation(prompt_len=len(prompt), tokens=new[:cut], wall_s=wall)
    return gen
