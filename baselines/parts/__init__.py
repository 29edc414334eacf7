"""The pieces several reference policies share, each written once: nothing here registers a policy.

* Gavel: :mod:`.gavel_lp` (the allocation LPs as pure functions), :mod:`.gavel_scheduler` (the round-based
  scheduler the ``gavel*`` policies subclass), :mod:`.solo_throughputs` (the throughput matrix from the
  performance model), :mod:`.gavel_rounds` (Gavel's round mechanism, also Hadar's and Pollux's).
* Castor and SJF-FFS: :mod:`.sjf_sharing` (SJF with a sharing fallback), :mod:`.castor_pairs` (Theorem 1 and
  Algorithm 2 over arrays), :mod:`.xi_predictor` (the interference predictor they and Gimbal read).
* Gimbal, Lucid, Gandiva: :mod:`.gimbal_rules` (the topology rule, packing sets), :mod:`.gimbal_search` (the
  coordination search), :mod:`.gimbal_layer` (the "+gimbal" wrapper around any host policy), :mod:`.job_facts`
  (profiled demand and deadlines).
* Hadar: :mod:`.hadar_alloc` (prices, FIND_ALLOC, the DP), compiled in :mod:`.hadar_find` over the free GPUs by class
  (:mod:`.hadar_free`), :mod:`.throughput_estimate` (HadarE's spec estimate).
* FIFO, SJF, SSF, YARN-CS: :mod:`.queue_policy` (exclusive list scheduling).
* SRSF, Tiresias: :mod:`.fit_set` (the set of jobs that should run, walked in priority order).
"""
