"""Reference scheduling policies from the papers, all acting through the environment's action vocabulary.
Importing this package registers them (the interface and the registry are :mod:`gpucluster_env.policy`)."""

# importing each module registers its policies, in this (listing) order
from gpucluster_env.baselines import (  # noqa: F401, I001
    classic, tiresias, srsf, sharing, castor, lucid, gandiva, gimbal, gavel, gavel_fifo, gavel_packed,
    gavel_gimbal, hadar, pollux, lookahead,
)
