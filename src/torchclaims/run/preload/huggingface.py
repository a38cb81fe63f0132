"""transformers (with its model code) and accelerate, for runs with several Hugging Face claims."""

from torchclaims.run.preload import load

load(("transformers", "transformers.modeling_utils", "accelerate"))
