"""
A static KV cache keeps tensor shapes constant during generate()
================================================================

:claim-verdict:`hf-static-cache-shapes`

The claim: during ``generate()`` with ``cache_implementation="static"`` the
key/value cache tensors keep one shape at every decoding step and each step
feeds the model inputs of one fixed shape, while the default dynamic cache
grows by one position per step. That is what lets a shape-specialising
compiler (Neuron, XLA) compile the decoding step once.

We run greedy generation with a tiny Llama on the configured device twice,
once with each cache, and record at every forward call, through a forward
hook, the shapes of the tensor arguments, of the logits and of every layer's
key and value cache. Nothing is compiled here: the shapes are the
precondition, not the compilation count.
"""

import itertools

import matplotlib.pyplot as plt
import torch
from _tiny_llama import tiny_llama_config
from transformers import LlamaForCausalLM
from transformers.utils import logging as hf_logging

from torchclaims.verify import verification

hf_logging.set_verbosity_error()

PROMPT_LENGTH = 5
NEW_TOKENS = 6

v = verification(
    "hf-static-cache-shapes",
    model="tiny Llama from a config (2 layers, 2 KV heads, head_dim 16, vocab 128), float32, seed 0",
    inputs=f"one prompt of {PROMPT_LENGTH} random token ids, greedy generate() of {NEW_TOKENS} new tokens",
    method="forward hook records tensor argument, logits and per-layer K/V cache shapes at every step; "
    "cache_implementation='static' against the default dynamic cache",
)

# %%
# The model and the recorder
# --------------------------
# The hook sees every forward call ``generate()`` makes: call 0 is the prompt
# (prefill), calls 1.. are the decoding steps.

config = tiny_llama_config(  # see gallery/_tiny_llama.py
    pad_token_id=0,
    bos_token_id=None,
    eos_token_id=None,
)
torch.manual_seed(0)
model = LlamaForCausalLM(config).eval().to(v.device)
prompt = torch.randint(1, config.vocab_size, (1, PROMPT_LENGTH)).to(v.device)


def cache_tensors(cache):
    """(keys, values) per layer, for both the current and the older Cache layouts."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))


def generate(cache_implementation):
    steps = []

    def hook(module, args, kwargs, out):
        cache = getattr(out, "cache", None) or out.past_key_values
        steps.append(
            {
                "inputs": tuple(sorted((k, tuple(t.shape)) for k, t in kwargs.items() if torch.is_tensor(t))),
                "logits": tuple(out.logits.shape),
                "kv": tuple((tuple(k.shape), tuple(val.shape)) for k, val in cache_tensors(cache)),
                "cache": type(cache).__name__,
            }
        )

    handle = model.register_forward_hook(hook, with_kwargs=True)
    try:
        extra = {} if cache_implementation is None else {"cache_implementation": cache_implementation}
        tokens = model.generate(prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False, **extra)
        v.sync()
    finally:
        handle.remove()
    return tokens.cpu(), steps


dynamic_tokens, dynamic = generate(None)
static_tokens, static = generate("static")

for label, steps in (("dynamic", dynamic), ("static", static)):
    print(f"--- {label} cache ({steps[0]['cache'] if steps else 'no forward calls recorded'})")
    for i, step in enumerate(steps):
        inputs = ", ".join(f"{k} {s}" for k, s in step["inputs"])
        kind = "prefill" if i == 0 else "decode"
        print(f"step {i} ({kind}): {inputs} | logits {step['logits']} | K layer 0 {step['kv'][0][0]}")
print("generated tokens, dynamic:", dynamic_tokens[0, PROMPT_LENGTH:].tolist())
print("generated tokens, static: ", static_tokens[0, PROMPT_LENGTH:].tolist())

# %%
# What the statement predicts
# ---------------------------
# The prefill call has a prompt-length input and is expected to differ from the
# decoding steps; the statement is about the decoding steps (calls 1..).

with v.check("static cache: every layer's K/V cache has one shape at every decoding step") as check:
    check.equal(len(static), NEW_TOKENS, "forward calls recorded")
    decode_kv = {step["kv"] for step in static[1:]}
    check.measure("distinct K/V shape sets over the decoding steps", len(decode_kv), tolerance="== 1")
    check.measure("layer 0 K shape", str(static[-1]["kv"][0][0]) if static else "none")
    check.measure("prefill uses the same K/V shapes", bool(static) and static[0]["kv"] in decode_kv)
    check.expect(len(decode_kv) == 1, f"{len(decode_kv)} different K/V shape sets during decoding")

with v.check("static cache: every decoding step feeds the model inputs of one fixed shape") as check:
    signatures = {(step["inputs"], step["logits"]) for step in static[1:]}
    check.measure("distinct input and logits shape sets over the decoding steps", len(signatures), tolerance="== 1")
    last = ", ".join(f"{k} {s}" for k, s in static[-1]["inputs"]) if static else "none"
    check.measure("decoding-step tensor arguments", last)
    check.expect(len(signatures) == 1, f"{len(signatures)} different input shape sets during decoding")

with v.check("dynamic cache: the K/V cache grows by one position per decoding step") as check:
    check.equal(len(dynamic), NEW_TOKENS, "forward calls recorded")
    lengths = [step["kv"][0][0][2] for step in dynamic]  # (batch, kv_heads, positions, head_dim)
    check.measure("layer 0 K length per call", str(lengths))
    growth = [b - a for a, b in itertools.pairwise(lengths)]
    check.expect(all(g == 1 for g in growth), f"cache length changed by {growth} between steps, not by 1")
    layers_agree = all(len({kv for kv in step["kv"]}) == 1 for step in dynamic)
    check.expect(layers_agree, "layers disagree on the K/V shapes within a step")

# %%
# How many shapes a shape-specialising compiler would see
# -------------------------------------------------------
# Counting distinct (inputs, K/V) shape sets over all calls, prefill included,
# gives the number of graphs a compiler that specialises on shapes would build
# for this one generation: two with the static cache, one per call with the
# dynamic one.

for label, steps in (("dynamic", dynamic), ("static", static)):
    print(f"{label}: {len({(s['inputs'], s['kv']) for s in steps})} distinct shape sets in {len(steps)} forward calls")

fig, ax = plt.subplots(figsize=(6, 3))
for label, steps, marker in (("dynamic cache", dynamic, "o"), ("static cache", static, "s")):
    ax.plot(range(len(steps)), [s["kv"][0][0][2] for s in steps], marker=marker, label=label)
ax.set_xlabel("forward call (0 = prompt, then one per new token)")
ax.set_ylabel("K cache length (positions)")
ax.set_title(f"KV cache length per step on {v.device.type}")
ax.legend()
fig.tight_layout()

v.finish()
