"""The callbacks a training run (:mod:`gpucluster_env.agents.train`) learns with and what is read from them: the
episode counter, the critic warm-up, the logger's formats, and the run's summary for ``meta.json``.

SB3 is imported inside each function, so that importing this module (and ``train``) stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def EpisodeCounter() -> Any:  # noqa: N802 (a class made on demand: SB3 is imported lazily)
    """A callback counting the training episodes that ended (``n``) and keeping the union of the action masks
    the rollouts met (``seen``: which actions training ever allowed; None for an algorithm without masks)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class EpisodeCounter(BaseCallback):
        n = 0
        seen: Any = None

        def _on_step(self) -> bool:
            self.n += sum(bool(d) for d in self.locals.get("dones", ()))
            masks = self.locals.get("action_masks")
            if masks is not None:
                m = np.asarray(masks, dtype=bool).reshape(-1, np.asarray(masks).shape[-1]).any(0)
                self.seen = m if self.seen is None else self.seen | m
            return True

    return EpisodeCounter()


def run_summary(cbs: list[Any], out: Path) -> dict[str, Any]:
    """What the run learned, for meta.json and the command's closing summary: training episodes, the
    evaluations (count, best mean return and when), checkpoints written."""
    ev, ckpt_dir = cbs[0], out / "checkpoints"
    results = [float(sum(r) / len(r)) for r in getattr(ev, "evaluations_results", []) if len(r)]
    steps = [int(t) for t in getattr(ev, "evaluations_timesteps", [])]
    best = max(range(len(results)), key=results.__getitem__) if results else None
    buf = list(getattr(cbs[2].model, "ep_info_buffer", None) or [])
    return {"episodes": int(cbs[2].n), "evaluations": len(results),
            "recent_train_return": float(sum(e["r"] for e in buf) / len(buf)) if buf else None,
            "recent_train_episodes": len(buf),
            "best_eval_return": None if best is None else results[best],
            "best_eval_timesteps": None if best is None else steps[best],
            "checkpoints": len(list(ckpt_dir.glob("*.zip"))) if ckpt_dir.is_dir() else 0}


def remove_empty_folders(out: Path) -> None:
    """Remove the callbacks' folders that nothing was written to (no evaluation or checkpoint fell due)."""
    for name in ("best", "checkpoints", "eval"):
        d = out / name
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()


def CriticWarmup(steps: int) -> Any:  # noqa: N802 (a class made on demand: SB3 is imported lazily)
    """A callback freezing the policy's own layers (``mlp_extractor.policy_net``, ``action_net``; SetsPolicy's
    shared set encoders too) for the first ``steps`` timesteps; the value layers keep learning."""
    from stable_baselines3.common.callbacks import BaseCallback

    class CriticWarmup(BaseCallback):
        def _set(self, trainable: bool) -> None:
            pol = self.model.policy
            mods = [pol.mlp_extractor.policy_net, pol.action_net]
            if hasattr(pol, "set_dim"):  # SetsPolicy: the shared set encoders are the policy's too
                mods.append(pol.features_extractor)
            for mod in mods:
                for p in mod.parameters():
                    p.requires_grad_(trainable)

        def _on_training_start(self) -> None:
            self._set(False)
            self.frozen = True

        def _on_rollout_start(self) -> None:
            if self.frozen and self.model.num_timesteps >= steps:
                self._set(True)
                self.frozen = False

        def _on_step(self) -> bool:
            return True

    return CriticWarmup()


def run_logger(out: Path) -> Any:
    """The run's logger: CSV under ``out/logs``, TensorBoard beside it when the package is installed."""
    from stable_baselines3.common.logger import configure

    formats = ["csv"]
    try:
        import tensorboard  # noqa: F401

        formats.append("tensorboard")
    except ImportError:
        pass
    return configure(str(out / "logs"), formats)
