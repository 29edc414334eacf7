"""The benchmark harness: run policies on boards of scenarios and seeds, keep the records, aggregate results
(each cell is one :func:`gpucluster_env.policy.run_episode`)."""
