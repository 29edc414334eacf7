"""Action masks that travel with each step's result instead of a second round trip to every worker.

sb3-contrib's MaskablePPO asks a vector env for masks with ``env_method("action_masks")`` before every step:
with subprocess envs that is one more message to and from each worker per step, as many as the step itself.
:class:`MaskInInfo` (inside each worker) puts the mask of the state it returns into the step's and the reset's
``info``; :class:`CachedMasks` (around the vector env) keeps them and answers ``env_method("action_masks")``
from them. After an episode ends, SB3's workers reset at once and the mask is the reset state's (taken from the
vector env's ``reset_infos``), the state the next action is chosen in.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

KEY = "action_mask"


class MaskInInfo(gym.Wrapper):
    """Adds ``info["action_mask"]``, the valid actions of the returned state, to every step and reset."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        info[KEY] = self.env.unwrapped.action_masks()
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, term, trunc, info = self.env.step(action)
        info[KEY] = self.env.unwrapped.action_masks()
        return obs, reward, term, trunc, info

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


class CachedMasks(VecEnvWrapper):
    """Serves ``env_method("action_masks")`` from the masks the workers sent with their last results (envs
    wrapped in :class:`MaskInInfo`); any other call goes to the wrapped vector env."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self._masks: np.ndarray | None = None

    def reset(self) -> Any:
        obs = self.venv.reset()
        self._masks = np.stack([info[KEY] for info in self.venv.reset_infos])
        return obs

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        resets = self.venv.reset_infos
        self._masks = np.stack([(resets[i] if dones[i] else infos[i])[KEY] for i in range(self.num_envs)])
        return obs, rewards, dones, infos

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        if method_name == "action_masks" and not args and not kwargs and self._masks is not None:
            idx = range(self.num_envs) if indices is None else (
                [indices] if isinstance(indices, int) else list(indices))
            return [self._masks[i] for i in idx]
        return self.venv.env_method(method_name, *args, indices=indices, **kwargs)
