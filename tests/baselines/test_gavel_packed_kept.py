"""#44: what packed Gavel keeps across rounds read as the plain computation: each job's class (model, batch,
GPUs asked), found once per job."""

from __future__ import annotations

from typing import Any

from gpucluster_env.baselines.gavel_packed import GavelPacked

from gpucluster_env.policy import run_episode


class _Checked(GavelPacked):
    """gavel-packed checking, at each round, every kept class against the view's plain reading."""

    checked = 0

    def act(self, observation: Any, env: Any) -> Any:
        out = super().act(observation, env)
        view = self.view(env)
        for j, c in self._klass_of.items():
            assert c == (view.model_index(j), view.batch(j), int(view.req_gpus[j]))
            self.checked += 1
        return out


def test_kept_job_classes_match_the_plain_ones() -> None:
    pol = _Checked()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 200})
    assert pol.checked > 1000
