"""
Share of popular text-generation architectures that run on the backend and match CPU
====================================================================================

:claim-verdict:`hf-architecture-coverage`

The claim: tiny randomly initialised models of a documented list of popular
text-generation architectures, built from their configurations without
downloading weights, run a forward pass and a short greedy generation on the
configured backend and give the same tokens, and logits within tolerance, as
on the CPU. The share that passes is reported.

For each architecture in the list below we build a two-layer model with
hidden size 32 from its configuration (seed 0) on the CPU and compute the
reference there: the logits of a six-token prompt and four greedily generated
tokens. The same weights are then copied to the configured device and run the
same way. An architecture *matches* when the logits agree within
``rtol=1e-3, atol=1e-4`` and the four tokens are identical. The run has a time
budget; architectures not reached within it count as not reached, never as
passing, and the share is taken over the whole list.

On the CPU the configured device *is* the reference, so a CPU run shows that
every listed architecture builds, runs and generates on the CPU, and that the
harness is deterministic; it says nothing about an accelerator, so the verdict
there is *unverified* and the figures describe the CPU only.
"""

import copy
import warnings

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Patch
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.utils import logging as hf_logging

from torchclaims.coverage import Evidence, NoReference, Outcome, run_items
from torchclaims.verify import verification

hf_logging.set_verbosity_error()
warnings.filterwarnings("ignore", module="transformers")

BUDGET_S = 60.0  # total time for building, the CPU references and the device runs
RTOL, ATOL = 1e-3, 1e-4
NEW_TOKENS = 4
PROMPT = [[3, 17, 42, 99, 5, 64]]

v = verification(
    "hf-architecture-coverage",
    model="tiny from-config models (2 layers, hidden 32, vocab 128, seed 0) of the architectures listed on this page",
    inputs=f"one prompt of {len(PROMPT[0])} token ids; greedy generate() of {NEW_TOKENS} tokens",
    method=f"logits within rtol {RTOL:g} / atol {ATOL:g} and identical tokens against the same weights on the CPU; "
    f"{BUDGET_S:g} s budget, share over all listed architectures",
)

# %%
# The documented list
# -------------------
# Popular decoder-only text-generation architectures in Transformers, by
# ``model_type``, with the configuration arguments that make each one tiny.
# Where a default would not follow from the hidden size (``head_dim``,
# ``rotary_dim``, expert counts, DeepSeek's latent-attention sizes) it is set
# explicitly. This is our list, not Hugging Face's top-100 ranking.

TOKENS = dict(bos_token_id=1, eos_token_id=2, pad_token_id=0)
BASE = dict(
    vocab_size=128,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    **TOKENS,
)
GPT2_STYLE = dict(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64, **TOKENS)

ARCHITECTURES = {
    "llama": BASE,
    "mistral": BASE,
    "mixtral": dict(BASE, num_local_experts=4, num_experts_per_tok=2),
    "qwen2": BASE,
    "qwen2_moe": dict(
        BASE, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32
    ),
    "qwen3": dict(BASE, head_dim=8),
    "qwen3_moe": dict(BASE, head_dim=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
    "gemma": dict(BASE, head_dim=8),
    "gemma2": dict(BASE, head_dim=8, sliding_window=16),
    "gemma3_text": dict(BASE, head_dim=8, sliding_window=16),
    "phi": BASE,
    "phi3": dict(BASE, original_max_position_embeddings=64),
    "gpt2": GPT2_STYLE,
    "gpt_bigcode": GPT2_STYLE,
    "gptj": dict(GPT2_STYLE, rotary_dim=4),
    "codegen": dict(GPT2_STYLE, rotary_dim=4, n_ctx=64),
    "gpt_neox": {k: val for k, val in BASE.items() if k != "num_key_value_heads"},
    "falcon": dict(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_hidden_size=64,
        max_position_embeddings=64, **TOKENS,
    ),
    "opt": dict(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
        word_embed_proj_dim=32, max_position_embeddings=64, **TOKENS,
    ),
    "bloom": dict(vocab_size=128, hidden_size=32, n_layer=2, n_head=4, **TOKENS),
    "mpt": dict(vocab_size=128, d_model=32, n_heads=4, n_layers=2, expansion_ratio=2, max_seq_len=64, **TOKENS),
    "starcoder2": BASE,
    "olmo": BASE,
    "olmo2": BASE,
    "stablelm": BASE,
    "granite": BASE,
    "cohere": BASE,
    "smollm3": BASE,
    "glm4": dict(BASE, head_dim=8),
    "deepseek_v3": dict(
        BASE, num_key_value_heads=4, moe_intermediate_size=16, n_routed_experts=4, num_experts_per_tok=2,
        n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=4, v_head_dim=8,
        qk_nope_head_dim=4, first_k_dense_replace=1,
    ),
    "gpt_oss": dict(
        BASE, intermediate_size=32, head_dim=8, num_local_experts=4, num_experts_per_tok=2, sliding_window=16
    ),
}
print(f"{len(ARCHITECTURES)} architectures:", ", ".join(ARCHITECTURES))

# %%
# One architecture: CPU reference, then the device
# ------------------------------------------------
# Each item builds the model on the CPU (seed 0), computes the reference there,
# copies the same weights to the configured device and runs them the same
# way. Besides logits and tokens we keep the smallest gap between the best
# and second-best score over the generated steps: when it is tiny, a token can
# flip under mere rounding differences, which is worth knowing before reading
# a mismatch. If the CPU reference itself cannot be computed (for example a
# missing optional dependency) the item has *no reference*; an exception on
# the device counts as *fails*.

prompt = torch.tensor(PROMPT)
mask = torch.ones_like(prompt)


def run_model(model, device):
    with torch.no_grad():
        logits = model(input_ids=prompt.to(device), attention_mask=mask.to(device)).logits
        out = model.generate(
            input_ids=prompt.to(device),
            attention_mask=mask.to(device),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
        )
    v.sync()
    scores = torch.stack([s[0].float().cpu() for s in out.scores])
    top2 = scores.topk(2, dim=-1).values
    return logits.float().cpu(), out.sequences[0, prompt.shape[1]:].cpu(), (top2[:, 0] - top2[:, 1]).min().item()


reference_scale = {}  # largest |logit| of each CPU reference


def architecture(name, kwargs):
    def item():
        try:
            config = AutoConfig.for_model(name, **kwargs)
            torch.manual_seed(0)
            model = AutoModelForCausalLM.from_config(config).eval()
            ref_logits, ref_tokens, margin = run_model(model, v.reference_device)
        except Exception as exc:  # not the device's fault: the CPU side broke
            raise NoReference(f"CPU reference raised {type(exc).__name__}: {exc}") from exc
        reference_scale[name] = ref_logits.abs().max().item()
        device_model = copy.deepcopy(model).to(v.device)
        logits, tokens, _ = run_model(device_model, v.device)
        same_shape = logits.shape == ref_logits.shape
        error = (logits.double() - ref_logits.double()).abs().max().item() if same_shape else float("nan")
        logits_ok = same_shape and torch.allclose(logits, ref_logits, rtol=RTOL, atol=ATOL)
        tokens_ok = torch.equal(tokens, ref_tokens)
        detail = f"tokens {tokens.tolist()}" + ("" if tokens_ok else f" vs CPU {ref_tokens.tolist()}")
        return Evidence(
            match=logits_ok and tokens_ok,
            detail=detail + ("" if logits_ok else f"; logits outside tolerance (shape {tuple(logits.shape)})"),
            values={"max_err": error, "margin": margin},
        )

    return item


report = run_items([(name, architecture(name, kwargs)) for name, kwargs in ARCHITECTURES.items()], budget_s=BUDGET_S)
print(report.table())
print()
print(report.summary())

# %%
# The verdict
# -----------
# The claim holds on a backend only if every listed architecture matches. A
# mismatch, a failure or an unsupported feature on the device refutes it;
# architectures without a CPU reference or not reached within the budget leave
# it unverified (unless something else already refuted it).

counts = report.counts()
with v.check("every listed architecture runs forward and generate on the device and matches the CPU") as check:
    check.measure("architectures listed", report.total)
    check.measure("architectures that match", f"{report.matched}/{report.total}")
    check.measure("share that match (all listed)", round(100 * report.share, 1), unit="%")
    if counts[Outcome.NO_REFERENCE]:
        judged = round(100 * report.judged_share, 1)
        check.measure("share that match (architectures with a CPU reference)", judged, unit="%")
    for outcome in Outcome:
        if outcome is not Outcome.MATCH:
            check.measure(f"architectures: {outcome.value}", counts[outcome])
    errors = [r.values["max_err"] for r in report.results if "max_err" in r.values]
    finite = [e for e in errors if e == e]  # NaN where the logits shapes differed
    check.measure("largest max abs logit error", max(finite, default=0.0))
    check.measure("largest reference logit magnitude", max(reference_scale.values(), default=0.0))
    check.measure("runs took", round(report.elapsed_s, 1), unit="s", tolerance=f"budget {BUDGET_S:g} s")
    check.expect(not counts[Outcome.MISMATCH], "differ from the CPU: " + ", ".join(report.names(Outcome.MISMATCH)))
    check.expect(not counts[Outcome.FAILS], "raise on the device: " + ", ".join(report.names(Outcome.FAILS)))
    check.expect(not counts[Outcome.UNSUPPORTED], "unsupported: " + ", ".join(report.names(Outcome.UNSUPPORTED)))
    refuted = counts[Outcome.MISMATCH] + counts[Outcome.FAILS] + counts[Outcome.UNSUPPORTED]
    if v.on_reference and not refuted:
        # Everything ran, but on the CPU "matches the CPU" compares the CPU with itself.
        check.unsupported(
            "the configured backend is the CPU reference itself: every listed architecture that was reached ran, "
            "but the comparison with the CPU needs another device"
        )
    if (counts[Outcome.NO_REFERENCE] or counts[Outcome.NOT_REACHED]) and not refuted:
        check.unsupported(
            f"not checked: {counts[Outcome.NO_REFERENCE]} architectures without a CPU reference "
            f"({', '.join(report.names(Outcome.NO_REFERENCE)) or 'none'}), {counts[Outcome.NOT_REACHED]} not reached "
            f"within the {BUDGET_S:g} s budget"
        )

# %%
# Beside the attributed figure
# ----------------------------
# Hugging Face is reported to have found that its libraries used directly on
# Trainium support 89% of the top 100 text-generation architectures, against
# 46% for Optimum Neuron v0.4.5 (see the attributed claim
# ``hf-direct-trainium-coverage``; the post could not be retrieved). That is
# **not the same measurement**: its list is most likely the Hub's ranking of
# real checkpoints, "support" is not defined in the material found, and it was
# measured on Trainium. Ours is a documented list of architectures, tiny
# random weights, one prompt, compared with the CPU on whichever backend ran
# this page. The right-hand bars are drawn hatched to keep them apart.

colors = {
    Outcome.MATCH: "tab:green",
    Outcome.MISMATCH: "tab:orange",
    Outcome.FAILS: "tab:red",
    Outcome.UNSUPPORTED: "tab:purple",
    Outcome.NO_REFERENCE: "tab:brown",
    Outcome.NOT_REACHED: "lightgray",
}
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 1]})
left.bar(range(report.total), [1] * report.total, color=[colors[r.outcome] for r in report.results], width=0.9)
left.set_xticks(range(report.total), [r.name for r in report.results], rotation=90, fontsize=7)
left.set_xlim(-0.6, report.total - 0.4)
left.set_yticks([])
left.set_title(f"{report.matched}/{report.total} architectures match on {v.device.type}")
legend = [Patch(color=colors[o], label=f"{o.value} ({counts[o]})") for o in Outcome]
left.legend(handles=legend, loc="upper center", ncol=6, fontsize=7, framealpha=0.9)
left.set_ylim(0, 1.3)

labels = [f"this page\n({v.device.type},\n{report.total} tiny)", "HF direct\n(attributed)", "Optimum\nNeuron\n(attr.)"]
right.bar(labels, [100 * report.share, 89, 46], color=["tab:green", "white", "white"],
          edgecolor=["tab:green", "gray", "gray"], hatch=["", "//", "//"])
right.set_ylim(0, 100)
right.set_ylabel("% of listed architectures")
right.set_title("different lists, different methods", fontsize=9)
right.tick_params(axis="x", labelsize=7)
fig.tight_layout()

v.finish()
