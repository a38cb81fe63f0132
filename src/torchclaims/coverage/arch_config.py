"""Tiny configurations derived from transformers' config classes, offline.

The list is every ``model_type`` in transformers' causal-LM mapping
(``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``): decoder-only models, the decoders of
encoder-decoder models and the multimodal models registered for causal LM.

A tiny configuration is made by passing small sizes to the config class's own
constructor, so that sizes it derives (head dimensions, per-layer lists) follow
from them: only parameters the constructor takes are set, only downwards, and
sub-configurations (``text_config``, ``vision_config``...) are shrunk the same
way. Architectures constrain their sizes differently (multi-head latent
attention needs as many key/value heads as heads; partial rotary embeddings
need wider heads), so a few size sets are tried in order; the first whose
model has at most :data:`MAX_PARAMETERS` parameters and runs a forward pass on
the CPU is used; then the same sets with the sizes :data:`TARGETED` fixes for
the architecture. When none works, the row says the harness could not build a
tiny model, with each attempt's error: a limit of the harness, not a fact
about the architecture.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

MAX_PARAMETERS = 20_000_000
TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
_VOCAB = 128
_LAYERS = (
    "num_hidden_layers",
    "n_layer",
    "n_layers",
    "num_layers",
    "decoder_layers",
    "encoder_layers",
    "num_decoder_layers",
)
_COMMON = {
    "max_position_embeddings": 64,
    "n_positions": 64,
    "n_ctx": 64,
    "max_seq_len": 64,
    "context_length": 64,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "top_k_experts": 2,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "kv_lora_rank": 16,
    "q_lora_rank": 16,
    "sliding_window": 16,
    "attention_window": 16,
    "num_kv_shared_layers": 0,
    "n_group": 1,
    "topk_group": 1,
    "hidden_size_per_layer_input": 8,
    "mm_tokens_per_image": 4,
    "image_size": 32,
    "patch_size": 8,
    "num_channels": 3,
}
_WIDTHS = ("hidden_size", "d_model", "n_embd", "embed_dim", "dim", "emb_dim", "n_embed")
_HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "decoder_attention_heads", "encoder_attention_heads")
_FFN = re.compile(r"(intermediate|ffn|inner|expert).*(size|dim)$|^d_ff$|^n_inner$")
_UNSET = ("head_dim", "num_key_value_heads", "num_experts_per_tok")  # None by default, needed once sizes are set


@dataclass(frozen=True)
class Sizes:
    """One size set: width, heads, key/value heads, head dimension and layers."""

    name: str
    width: int
    heads: int
    kv_heads: int
    head_dim: int
    layers: int = 2

    def values(self) -> dict[str, int]:
        values = dict(_COMMON)
        values.update(dict.fromkeys(_LAYERS, self.layers))
        values.update(dict.fromkeys(_WIDTHS, self.width))
        values.update(dict.fromkeys(_HEADS, self.heads))
        values.update(
            num_key_value_heads=self.kv_heads,
            head_dim=self.head_dim,
            qk_rope_head_dim=self.head_dim // 2,
            qk_nope_head_dim=self.head_dim // 2,
            v_head_dim=self.head_dim,
            rotary_dim=self.head_dim // 2,
        )
        return values


SIZE_SETS = (
    Sizes("2 layers, width 32, 4 heads, 2 key/value heads", 32, 4, 2, 8),
    Sizes("2 layers, width 32, 4 heads, 4 key/value heads", 32, 4, 4, 8),
    Sizes("2 layers, width 64, 4 heads, 4 key/value heads", 64, 4, 4, 16),
    Sizes("2 layers, width 128, 4 heads, 4 key/value heads", 128, 4, 4, 32),
    # hybrid models put attention only on every 4th or 8th layer
    Sizes("4 layers, width 32, 4 heads, 4 key/value heads", 32, 4, 4, 8, layers=4),
    Sizes("8 layers, width 32, 4 heads, 4 key/value heads", 32, 4, 4, 8, layers=8),
)


# Sizes some config classes tie together beyond what a size set sets, read from their validators'
# messages (and, for hybrid models, which layers have attention). They are tried after the plain size
# sets fail and before an architecture is given up, so a row says "could not be shrunk" only when the
# harness, not the model, ran out of ways to build it.
TARGETED: dict[str, dict] = {
    "gpt_neo": {"attention_types": [[["global", "local"], 1]]},  # one entry per layer
    "mamba2": {"num_heads": 8, "n_groups": 1},  # hidden_size * expand == num_heads * head_dim
    "zamba2": {"layers_block_type": ["mamba", "hybrid"]},  # one type per layer
    "reformer": {
        "axial_pos_embds_dim": [16, 16],
        "axial_pos_shape": [8, 8],
        "attn_layers": ["local", "lsh"],
        "lsh_attn_chunk_length": 4,
        "local_attn_chunk_length": 4,
    },  # factors sum to the width
    "bamba": {"mamba_n_heads": 4, "mamba_d_head": 16, "mamba_n_groups": 1, "attn_layer_indices": [1]},
    "granitemoehybrid": {
        "mamba_n_heads": 4,
        "mamba_d_head": 16,
        "mamba_n_groups": 1,
        "layer_types": ["mamba", "attention"],
    },
    "lfm2_moe": {"layer_types": ["conv", "full_attention"]},
}


def architectures() -> dict[str, str]:
    """model_type -> causal-LM class name, as transformers registers them."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _parameters(config_class) -> set[str]:
    return set(inspect.signature(config_class.__init__).parameters) - {"self", "kwargs"}


def _default(config, name):
    try:
        return getattr(config, name, None)
    except Exception:  # per-layer attributes refuse a single value
        return None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def shrunk_kwargs(config_class, sizes: Sizes) -> dict:
    """Constructor arguments that make ``config_class`` tiny with ``sizes``."""
    defaults = config_class()
    accepted = _parameters(config_class)
    values = sizes.values()
    kwargs: dict = {}
    for name in accepted:
        value = _default(defaults, name)
        small = values.get(name)
        if small is None and _FFN.search(name):
            small = 2 * sizes.width
        if small is None and "vocab" in name:
            small = _VOCAB
        if small is not None and ((_is_int(value) and value > small) or (value is None and name in _UNSET)):
            kwargs[name] = small
    for name, token in TOKEN_IDS.items():
        if name in accepted:
            kwargs[name] = token
    if "is_decoder" in accepted or hasattr(defaults, "is_decoder"):
        kwargs["is_decoder"] = True  # encoder models registered for causal LM run as decoders
    for name in getattr(config_class, "sub_configs", None) or {}:
        sub = _default(defaults, name)
        if name in accepted and hasattr(sub, "to_dict"):
            kwargs[name] = {"model_type": sub.model_type, **shrunk_kwargs(type(sub), sizes)}
    return kwargs


def tiny_config(model_type: str, sizes: Sizes, targeted: bool = False):
    """The config class built with ``sizes`` (and, with ``targeted``, the architecture's TARGETED sizes)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config_class = CONFIG_MAPPING[model_type]
    return config_class(**{**shrunk_kwargs(config_class, sizes), **(TARGETED.get(model_type, {}) if targeted else {})})


def attempts(model_type: str) -> list[tuple[Sizes, bool]]:
    """(size set, targeted) in the order they are tried: the plain size sets, then with targeted sizes."""
    return [(sizes, False) for sizes in SIZE_SETS] + [(sizes, True) for sizes in SIZE_SETS if model_type in TARGETED]
