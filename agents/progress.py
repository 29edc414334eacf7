"""A ``rich`` progress bar for stable-baselines3 training (SB3's own needs tqdm, not a dependency here)."""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.callbacks import BaseCallback


class RichProgress(BaseCallback):
    """Timesteps done of ``total``, steps per second, and the mean return of the last finished episodes."""

    def __init__(self, total: int) -> None:
        super().__init__()
        self.total = total
        self._progress: Any = None
        self._task: Any = None

    def _on_training_start(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("learning"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"),
                                  TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[ret]}"))
        self._progress.start()
        self._task = self._progress.add_task("train", total=self.total, ret="")

    def _on_step(self) -> bool:
        buf = getattr(self.model, "ep_info_buffer", None)
        ret = f"return {sum(e['r'] for e in buf) / len(buf):.2f}" if buf else ""
        self._progress.update(self._task, completed=min(self.num_timesteps, self.total), ret=ret)
        return True

    def _on_training_end(self) -> None:
        if self._progress is not None:
            self._progress.stop()
