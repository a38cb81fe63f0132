"""A tiny Llama built from a configuration, shared by the Hugging Face claims.

Nothing is downloaded: the weights are random (seed 0) and the checkpoint a few
kilobytes in a temporary directory, which is all ``from_pretrained`` needs.
"""

import tempfile

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

SIZES = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    vocab_size=128,
    max_position_embeddings=64,
)


def tiny_llama_config(**overrides) -> LlamaConfig:
    """Two layers, hidden size 32, a 128-token vocabulary; ``overrides`` win."""
    return LlamaConfig(**{**SIZES, **overrides})


def tiny_llama_checkpoint(**overrides) -> tempfile.TemporaryDirectory:
    """A seeded tiny Llama saved to a temporary directory (delete it with .cleanup())."""
    torch.manual_seed(0)
    checkpoint = tempfile.TemporaryDirectory()
    LlamaForCausalLM(tiny_llama_config(**overrides)).save_pretrained(checkpoint.name)
    return checkpoint


def load_devices(checkpoint: str, device_map) -> tuple[list[str] | None, Exception | None]:
    """Reload a checkpoint with ``from_pretrained(checkpoint, device_map=...)``.

    Returns the sorted device types of its parameters, or the exception that
    loading raised (for a device string PyTorch does not know, the exception
    is the evidence).
    """
    try:
        model = AutoModelForCausalLM.from_pretrained(checkpoint, device_map=device_map)
    except Exception as exc:
        return None, exc
    return sorted({p.device.type for p in model.parameters()}), None
