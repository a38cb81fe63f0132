"""
TrainingArguments picks the backend's device automatically; inference must name it
==================================================================================

:claim-verdict:`hf-training-args-device`

The claim has two halves. Training: ``TrainingArguments(output_dir=...)``
selects the configured backend's device without being told, so its
``.device`` has the backend's device type. Inference: without a device
argument, ``from_pretrained`` leaves the model on the CPU on every backend,
and ``pipeline()`` moves it to a CUDA, XPU or MPS device (also NPU, MLU, MUSA
and HPU) but leaves it on the CPU on Neuron, TPU and torch_xla, where
inference code has to pass the device string itself.

We construct ``TrainingArguments`` with nothing but an output directory and
compare ``.device.type`` with the configured backend. For the inference half
we take the two usual entry points with no device argument, a tiny model
loaded with ``from_pretrained`` and a ``pipeline("text-generation")`` around
it, and compare where their parameters end up with what the statement says
for the configured backend. On the CPU the default and the configured device
are the same, so the inference half cannot be told apart there and is
reported as not checked.
"""

import tempfile
import time

import torch
from _tiny_llama import tiny_llama_config
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    TrainingArguments,
    pipeline,
)
from transformers.utils import logging as hf_logging

from torchclaims.verify import verification

hf_logging.set_verbosity_error()

v = verification(
    "hf-training-args-device",
    model="tiny Llama from a config (2 layers, hidden 32, vocab 128) with a 128-word WordLevel tokenizer",
    inputs="TrainingArguments(output_dir=<temporary directory>) with no other argument",
    method="compare TrainingArguments(...).device.type and the parameter devices of device-less inference code "
    "with the configured backend's device type",
)

# %%
# Training: ``TrainingArguments`` with only an output directory
# -------------------------------------------------------------
# The device index differs by backend (``cuda:0``, ``neuron:0``, ``tpu:0``),
# so we compare the device *type*. The first construction pays for lazy
# imports (accelerate's state), which is why it can take seconds.

with v.check("TrainingArguments(output_dir=...).device has the configured backend's device type") as check:
    with tempfile.TemporaryDirectory() as output_dir:
        started = time.perf_counter()
        args = TrainingArguments(output_dir=output_dir)
        selected = args.device
        check.measure("construction and .device", round(time.perf_counter() - started, 2), unit="s")
    check.measure("TrainingArguments.device", str(selected))
    check.measure("TrainingArguments.n_gpu", args.n_gpu)
    check.equal(selected.type, v.device.type, "device type selected by TrainingArguments")

# %%
# Inference: the same model with no device argument
# -------------------------------------------------
# ``from_pretrained`` without ``device_map`` and ``pipeline`` without ``device``
# are what inference code looks like when it does not name a device. The
# tokenizer is a word-level vocabulary built in memory (no download).

config = tiny_llama_config(  # see gallery/_tiny_llama.py
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)
vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{f"w{i}": i for i in range(4, 128)}}
word_level = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
word_level.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(
    tokenizer_object=word_level, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>"
)
torch.manual_seed(0)
checkpoint = tempfile.TemporaryDirectory()
LlamaForCausalLM(config).save_pretrained(checkpoint.name)

loaded = AutoModelForCausalLM.from_pretrained(checkpoint.name)
from_pretrained_devices = sorted({str(p.device.type) for p in loaded.parameters()})
generator = pipeline(
    "text-generation", model=AutoModelForCausalLM.from_pretrained(checkpoint.name), tokenizer=tokenizer
)
pipeline_devices = sorted({str(p.device.type) for p in generator.model.parameters()})
print("from_pretrained(path) parameters on:", from_pretrained_devices)
print("pipeline(model=...) device:", generator.device, "parameters on:", pipeline_devices)
print("pipeline output:", generator("w5 w6 w7", max_new_tokens=3, do_sample=False)[0]["generated_text"])

# What the statement says ``pipeline()`` does without a device, by device type
# (data under test): it moves the model to these devices by itself; on any
# other backend the model stays on the CPU.
PIPELINE_DETECTS = ("cuda", "xpu", "mps", "npu", "mlu", "musa", "hpu")
SAME_AS_DEFAULT = (
    "the configured backend is the CPU, which is also where device-less inference code lands; "
    "whether inference code must name the device can only be seen on an accelerator"
)

with v.check("from_pretrained without device_map leaves the model on the CPU") as check:
    check.measure("parameter device types", ", ".join(from_pretrained_devices), tolerance="cpu")
    if v.on_reference:
        check.unsupported(SAME_AS_DEFAULT)
    check.equal(from_pretrained_devices, [v.reference_device.type], "parameter device types, against the CPU")

with v.check("pipeline() without device moves the model only to the devices the statement lists") as check:
    expected = v.device.type if v.device.type in PIPELINE_DETECTS else v.reference_device.type
    check.measure("pipeline device", str(generator.device))
    check.measure("parameter device types", ", ".join(pipeline_devices), tolerance=expected)
    if v.on_reference:
        check.unsupported(SAME_AS_DEFAULT)
    check.equal(pipeline_devices, [expected], f"parameter device types ({v.device.type} configured)")

checkpoint.cleanup()
v.finish()
