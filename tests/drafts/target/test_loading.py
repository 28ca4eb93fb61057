from __future__ import annotations

from pathlib import Path

import huggingface_hub
import pytest
import torch

from drafts.errors import ConfigError, DeviceUnavailableError, ModelLoadError
from drafts.target import loading
from drafts.target.device import default_dtype, resolve_device
from drafts.target.loading import TargetFingerprint, context_length, load_target, tokenizer_hash
from drafts.target.packed_linear import PackedLinear
from drafts.target.runner import TargetRunner
from tests.tiny_targets import FakeTokenizer, tiny_model

CPU = torch.device("cpu")


def test_a_nonexistent_path_is_a_model_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist; check the path, or use one of"):
        load_target(str(tmp_path / "no-such-model"), CPU, torch.float32)


def test_a_nonexistent_relative_path_is_a_model_load_error() -> None:
    with pytest.raises(ModelLoadError, match="model path ./no-such-model does not exist"):
        load_target("./no-such-model", CPU, torch.float32)


def test_a_directory_without_config_json_is_a_model_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="is a directory without config.json; point --target at a saved model"):
        load_target(str(tmp_path), CPU, torch.float32)


def test_a_nonexistent_gguf_file_is_a_model_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"GGUF file .*missing\.gguf does not exist"):
        load_target(str(tmp_path / "missing.gguf"), CPU, torch.float32)


def test_a_saved_model_without_tokenizer_files_is_a_model_load_error(tmp_path: Path) -> None:
    tiny_model("llama").save_pretrained(tmp_path)

    with pytest.raises(ModelLoadError, match="could not load the tokenizer of target"):
        load_target(str(tmp_path), CPU, torch.float32)


@pytest.mark.skipif(not huggingface_hub.constants.HF_HUB_OFFLINE, reason="needs HF_HUB_OFFLINE=1")
def test_a_hub_id_while_offline_is_a_model_load_error_that_says_why() -> None:
    with pytest.raises(ModelLoadError, match="hub ids need network access"):
        load_target("nobody-here/no-such-model", CPU, torch.float32)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_asking_for_cuda_without_a_gpu_is_a_device_unavailable_error() -> None:
    with pytest.raises(DeviceUnavailableError, match="--device cuda, but torch sees no CUDA GPU here"):
        resolve_device("cuda")


@pytest.mark.skipif(torch.cuda.is_available() or torch.backends.mps.is_available(), reason="has an accelerator")
def test_auto_picks_the_cpu_on_a_machine_without_accelerators() -> None:
    assert resolve_device("auto") == CPU


def test_cpu_is_always_available_in_fp32() -> None:
    assert resolve_device("cpu") == CPU
    assert default_dtype(CPU) is torch.float32


def test_an_unknown_device_is_refused_with_the_choices() -> None:
    with pytest.raises(DeviceUnavailableError, match="unknown device 'tpu'; use one of auto, cpu, cuda, mps"):
        resolve_device("tpu")


def test_a_device_error_is_a_config_error() -> None:
    assert issubclass(DeviceUnavailableError, ConfigError)


def test_the_context_length_is_max_position_embeddings() -> None:
    assert context_length(tiny_model("llama", max_position_embeddings=77)) == 77


def test_the_tokenizer_hash_is_stable_and_depends_on_the_vocabulary() -> None:
    class Shifted(FakeTokenizer):
        def get_vocab(self) -> dict[str, int]:
            return {char: i + 1 for char, i in super().get_vocab().items()}

    assert tokenizer_hash(FakeTokenizer()) == tokenizer_hash(FakeTokenizer(eos_token_id=3))
    assert tokenizer_hash(FakeTokenizer()) != tokenizer_hash(Shifted())
    assert len(tokenizer_hash(FakeTokenizer())) == 16


def test_a_fingerprint_round_trips_through_a_dict() -> None:
    fingerprint = TargetFingerprint("tiny", 3, 32, 64, "abc")

    data = {**fingerprint.to_dict(), "extra": "ignored"}

    assert TargetFingerprint.from_dict(data) == fingerprint


@pytest.fixture
def saved_tiny_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tiny Llama saved as a model directory (its tokenizer: the one-character fake)."""
    tiny_model("llama").save_pretrained(tmp_path)
    monkeypatch.setattr(loading, "_tokenizer_from_pretrained", lambda source, spec: FakeTokenizer())
    return str(tmp_path)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN")
def test_an_inference_load_packs_a_cpu_float32_target_and_a_plain_load_stays_dense(saved_tiny_target: str) -> None:
    packed = load_target(saved_tiny_target, CPU, torch.float32, linear="auto")
    dense = load_target(saved_tiny_target, CPU, torch.float32)  # training, data generation: the default

    assert packed.linear == "packed" and any(isinstance(m, PackedLinear) for m in packed.model.modules())
    assert dense.linear == "dense" and not any(isinstance(m, PackedLinear) for m in dense.model.modules())
    assert TargetRunner(packed).linear == "packed"


def test_an_inference_load_in_bfloat16_stays_dense_without_an_error(saved_tiny_target: str) -> None:
    loaded = load_target(saved_tiny_target, CPU, torch.bfloat16, linear="auto")

    assert loaded.linear == "dense" and not any(isinstance(m, PackedLinear) for m in loaded.model.modules())


def test_asking_for_packed_layers_in_bfloat16_fails_before_loading(saved_tiny_target: str) -> None:
    with pytest.raises(ConfigError, match="packed Linear layers need"):
        load_target(str(Path(saved_tiny_target) / "not-read"), CPU, torch.bfloat16, linear="packed")
