"""Reference scheduling policies from the papers, all acting through the environment's action vocabulary.
Importing this package registers them (the interface and the registry are :mod:`gpucluster_env.policy`).

One module per registered policy, named after it (``-`` and ``+`` read ``_``): ``sjf-ffs`` is
:mod:`.sjf_ffs`, ``lucid+gimbal`` is :mod:`.lucid_gimbal`; the one exception is ``gavel``, Gavel's default
max-min fairness policy, in :mod:`.gavel_maxmin` (``gpucluster_env.traces.gavel`` reads Gavel's traces).
What several policies share -- Gavel's scheduler and LPs, Castor's pair arithmetic, Gimbal's rules, search and
coordination wrapper, Hadar's allocator, throughput tables, the interference predictor -- is in :mod:`.parts`.
"""

# importing each module registers its policies, in this (listing) order
from gpucluster_env.baselines import (  # noqa: F401, I001
    fifo, sjf, ssf, yarn_cs, tiresias, srsf, sjf_ffs, castor, castor_oracle, castor_timeslice, lucid, gandiva,
    lucid_gimbal, gandiva_gimbal, gavel_maxmin, gavel_makespan, gavel_ftf, gavel_fifo, gavel_packed,
    gavel_gimbal, gavel_packed_gimbal, hadar, hadare, pollux, lookahead,
)
