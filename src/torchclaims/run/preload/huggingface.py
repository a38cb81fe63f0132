"""transformers (with its model code) and accelerate, for runs with several Hugging Face claims."""

from torchclaims.run.preload import accelerator_built, load

if not accelerator_built():
    load(("transformers", "transformers.modeling_utils", "accelerate"))
