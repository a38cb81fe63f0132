"""The last module the fork server imports: what every claim needs and no group
waits for, then the preloads are complete (torchclaims.run.preload.settle)."""

from torchclaims.run.preload import LATE, load, settle

load(LATE)
settle()
