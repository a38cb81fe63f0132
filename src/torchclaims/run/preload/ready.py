"""The last module the fork server imports: the preloads are complete (torchclaims.run.preload.settle)."""

from torchclaims.run.preload import settle

settle()
