"""
A Hugging Face causal LM trains and generates on another device with only the device string changed
===================================================================================================

:claim-verdict:`hf-causal-lm-device-switch`

The claim: a Transformers causal language model, trained for two AdamW
steps and then asked for four greedy tokens, gives on the configured device
what it gives on the CPU, with the device string as the only change to the
code: the loss of every step and the weights after the last within float32
tolerance, and the same generated tokens.

This is the small MLP of device-switch-parity grown to a real model: a tiny
Llama built from its configuration (two layers, hidden size 32, random
weights, nothing downloaded), its own loss, ``generate()`` with its cache.
The code below calls nothing backend-specific: no synchronisation, no
``mark_step``. Whatever else a backend needs shows as a refutation or an error
here, with the step where it happened.
"""

import time

import torch
from _tiny_llama import tiny_llama_config
from transformers import LlamaForCausalLM

from torchclaims.verify import verification

v = verification(
    "hf-causal-lm-device-switch",
    model="LlamaForCausalLM, 2 layers, hidden 32, vocabulary 128, float32, seed 0",
    inputs="a seeded batch of 2 sequences of 16 tokens (labels = inputs); a 4-token prompt",
    method="2 AdamW steps (lr 1e-3), then generate(max_new_tokens=4, do_sample=False); losses, weights and tokens "
    "against the CPU",
)

STEPS = 2
NEW_TOKENS = 4
torch.manual_seed(0)
tokens = torch.randint(0, 128, (2, 16))
prompt = tokens[:1, :4]


# %%
# The code a user would move, written once
# ----------------------------------------
# Only ``device`` differs between the two runs.


def train_and_generate(device) -> tuple[list[float], list[torch.Tensor], list[int]]:
    torch.manual_seed(0)
    model = LlamaForCausalLM(tiny_llama_config()).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = tokens.to(device)
    losses = []
    for _ in range(STEPS):
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        generated = model.generate(prompt.to(device), max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0)
    weights = [p.detach().cpu() for p in model.parameters()]
    return losses, weights, generated[0].cpu().tolist()


reference = train_and_generate(v.reference_device)
print(f"CPU losses: {[round(x, 5) for x in reference[0]]}; tokens: {reference[2]}")

SAME_DEVICE = "the configured backend is the CPU reference itself; the comparison needs another device"

# %%
# The same code on the configured device
# --------------------------------------

with v.check("two training steps and generate() run on the device unchanged") as check:
    started = time.perf_counter()
    try:
        losses, weights, generated = train_and_generate(v.device)
    except Exception as exc:  # noqa: BLE001 - what the unchanged code raised is the evidence
        check.expect(False, f"the unchanged code raised {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
        losses = None
    else:
        check.measure("time for the steps and generate() on the device", time.perf_counter() - started, unit="s")
        check.equal(len(generated), len(reference[2]), "length of the generated sequence")

with v.check("the loss of every step and the weights after the last match the CPU") as check:
    if v.on_reference:
        check.unsupported(SAME_DEVICE)
    if losses is None:
        check.unsupported("the code did not run on the device (see the first check)")
    for step, (loss, expected) in enumerate(zip(losses, reference[0], strict=True), 1):
        check.close(torch.tensor(loss), torch.tensor(expected), rtol=1e-4, atol=1e-5, what=f"loss at step {step}")
    flat = lambda tensors: torch.cat([t.flatten() for t in tensors])  # noqa: E731
    check.close(flat(weights), flat(reference[1]), rtol=1e-4, atol=1e-4, what="weights after the last step")

with v.check("generate() gives the CPU's tokens") as check:
    if v.on_reference:
        check.unsupported(SAME_DEVICE)
    if losses is None:
        check.unsupported("the code did not run on the device (see the first check)")
    check.measure("tokens on the device", " ".join(map(str, generated)))
    check.measure("tokens on the CPU", " ".join(map(str, reference[2])))
    check.equal(generated, reference[2], "generated tokens")

v.finish()
