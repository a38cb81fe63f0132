"""A training step of a tiny Hugging Face causal LM (Llama, built from a configuration: nothing downloaded).

    torchclaims check examples/check/hf_causal_lm.py:tiny_llama_step
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama_step():
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, vocab_size=128, max_position_embeddings=64, use_cache=False)
    model = LlamaForCausalLM(config)
    ids = torch.randint(0, config.vocab_size, (2, 8))
    return model, {"input_ids": ids, "labels": ids}, lambda out: out.loss
