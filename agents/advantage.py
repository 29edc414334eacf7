"""A learned policy that improves on SRSF: a model of each candidate action's advantage over SRSF's own.

Rollout-based approximate policy iteration (Lagoudakis and Parr's "reinforcement learning as classification
using rollouts"; Bertsekas' rollout with a learned cost): the search expert ``lookahead`` scores a few candidate
actions by rolling SRSF forward on copies of the simulator; :mod:`.advantage_train` fits an XGBoost regressor
to those scores (each candidate's cost minus SRSF's own, in job-hours of the rollout) on the expert's states
(optionally then on the states the learned policy itself visits: DAgger rounds). At play time there is no
search: the policy lists the same candidates (:class:`~gpucluster_env.baselines.lookahead.CandidateLister`),
predicts each one's advantage from :func:`~.advantage_features.candidate_features` and takes the best if its
predicted advantage is below ``-threshold``, else SRSF's action. It reads no observation, only the cluster
view, so it runs on any cluster and trace SRSF runs on.

* ``rl-advantage``: the model shipped in the package (``gpucluster_env/agents/models/rl-advantage``), trained
  by the command in ``docs/rl.md``.
* ``rl:DIR`` for a folder written by ``gpucluster train-advantage`` (``model.json`` and ``meta.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.agents.advantage_features import FEATURE_NAMES, candidate_features
from gpucluster_env.agents.model_meta import read_meta
from gpucluster_env.baselines.lookahead import CandidateLister

from gpucluster_env.engine import Action
from gpucluster_env.policy import Policy, make_policy, register_policy
from gpucluster_env.policy_options import NON_NEGATIVE

ALGO = "rollout_advantage"
"""``meta.json["algo"]`` of a model written by :mod:`.advantage_train`."""
SHIPPED_ADVANTAGE = Path(__file__).with_name("models") / "rl-advantage"


def load_advantage_model(model_dir: str | Path) -> tuple[Any, dict[str, Any]]:
    """The XGBoost booster of ``model_dir`` (``model.json``, predicting on one thread) and its metadata; a
    one-line error naming the folder when either is missing or the features differ from this version's."""
    meta = read_meta(model_dir)
    if meta.get("algo") != ALGO:
        raise ValueError(f"{model_dir}: meta.json says algo {meta.get('algo')!r}, not {ALGO!r}")
    have = tuple(meta.get("features", ()))
    if have != FEATURE_NAMES:
        i = next((k for k, (a, b) in enumerate(zip(have, FEATURE_NAMES, strict=False)) if a != b),
                 min(len(have), len(FEATURE_NAMES)))
        a = have[i] if i < len(have) else "(none)"
        b = FEATURE_NAMES[i] if i < len(FEATURE_NAMES) else "(none)"
        raise ValueError(f"{model_dir}: the model reads {len(have)} features, this version computes "
                         f"{len(FEATURE_NAMES)} (column {i}: {a!r} vs {b!r}); retrain it with "
                         "`gpucluster train-advantage`")
    path = Path(model_dir) / "model.json"
    if not path.is_file():
        raise FileNotFoundError(f"{model_dir}: no model.json")
    import xgboost as xgb

    booster = xgb.Booster()
    try:
        booster.load_model(str(path))
    except xgb.core.XGBoostError as e:
        raise ValueError(f"{path}: not an XGBoost model ({str(e).splitlines()[0][:200]})") from None
    booster.set_param({"nthread": 1})
    return booster, meta


class AdvantagePolicy(Policy):
    """SRSF, overridden where a learned model predicts a candidate action does better (no search at play)."""

    name: ClassVar[str] = "rl"
    kind: ClassVar[str] = "learned from rollouts"
    description: ClassVar[str] = "SRSF corrected by a learned rollout-advantage model (gpucluster train-advantage)"
    paper: ClassVar[str] = "-"

    def __init__(self, model_dir: str | Path, threshold: float | None = None) -> None:
        """``threshold``: the least predicted gain (job-hours of a rollout) for leaving SRSF's action; None:
        the value the model was trained with (``meta.json``)."""
        self.model_dir = str(model_dir)
        self.booster, self.meta = load_advantage_model(model_dir)
        self.threshold = float(self.meta.get("threshold", 0.0) if threshold is None else threshold)
        if not self.threshold >= 0:
            raise ValueError(f"{self.model_dir}: threshold must be >= 0, got {threshold!r}")
        self._base = make_policy(self.meta.get("base", "srsf"))
        self._lister = CandidateLister(int(self.meta.get("starts", 3)))
        self._decisions = self._departures = 0

    stat_names: ClassVar[tuple[str, ...]] = ("scored", "departures")

    def reset(self, env: Any) -> None:
        self._lister.reset()
        self._decisions = self._departures = 0

    def episode_stats(self) -> dict[str, float]:
        """Decision points with a choice the model scored, and how often it left SRSF's action."""
        return {"scored": self._decisions, "departures": self._departures}

    def scores(self, env: Any) -> tuple[list[Action], np.ndarray]:
        """The candidate actions at ``env``'s state (SRSF's first) and the model's predicted advantage of each
        over SRSF's (0 for SRSF's own; lower is better)."""
        view = self.view(env)
        own = self._base.act(None, env)
        if not isinstance(own, Action):
            raise TypeError(f"{self.model_dir}: base policy answered {own!r}, not a typed action")
        left = view.remaining_solo_time()
        cands = self._lister.actions(view, own, float(getattr(env.unwrapped, "min_run_s", 0.0)), left)
        if len(cands) == 1:
            return cands, np.zeros(1)
        pred = self.booster.inplace_predict(candidate_features(view, own, cands[1:], left))
        return cands, np.concatenate([[0.0], np.asarray(pred, dtype=np.float64)])

    def act(self, observation: Any, env: Any) -> Action:
        cands, adv = self.scores(env)
        best = cands[0]
        if len(cands) > 1:
            self._decisions += 1
            i = int(np.argmin(adv[1:])) + 1
            if adv[i] < -self.threshold:
                best = cands[i]
                self._departures += 1
        self._lister.chosen(self.view(env), best)
        return best


@register_policy
class ShippedAdvantage(AdvantagePolicy):
    """The rollout-advantage model shipped with the package (docs/rl.md)."""

    name: ClassVar[str] = "rl-advantage"
    kind: ClassVar[str] = "learned from rollouts"
    description: ClassVar[str] = (
        "Not RL through the gym interface: SRSF corrected by an XGBoost model of each candidate action's rollout "
        "advantage over SRSF's, fitted to the blind search expert's rollouts on engine clones (one step of "
        "rollout policy improvement; docs/rl.md); no search at play"
    )
    paper: ClassVar[str] = "this package (issue 28); Lagoudakis & Parr ICML'03 rollout classification"

    def __init__(self, threshold: Annotated[float, NON_NEGATIVE] = 0.0) -> None:
        super().__init__(SHIPPED_ADVANTAGE, threshold)
