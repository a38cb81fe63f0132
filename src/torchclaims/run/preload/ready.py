"""The last module the fork server imports: what every claim needs and no group
waits for, then the preloads are complete (torchclaims.run.preload.settle)."""

from torchclaims.run.preload import LATE, guard, load, settle

guard("the preload groups")  # a group module imported by the server itself, not through load()
load(LATE)
settle()
