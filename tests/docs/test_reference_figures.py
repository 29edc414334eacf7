"""A sample of the figures the reference pages state, checked against what the code gives today (issue #45: a
figure on a reference page matches what its command prints). Each check reads the sentence from the page, so
an edit of either side that breaks the match fails here."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
from gpucluster_env.leaderboard.board import load_board
from gpucluster_env.traces.alibaba import load_pai_jobs
from gpucluster_env.traces.helios_jobs import load_helios_jobs
from gpucluster_env.traces.philly import load_philly_csv

from gpucluster_env.engine.metric_specs import METRICS

ROOT = Path(__file__).resolve().parents[2]
EMBEDDED = ROOT / "traces" / "embedded"
WORDS = {"nine": 9, "ten": 10, "eleven": 11, "twelve": 12}


def _number(text: str, pattern: str) -> int:
    m = re.search(pattern, text)
    assert m, f"the page no longer says {pattern!r}"
    value = m.group(1)
    return WORDS[value] if value in WORDS else int(value.replace(",", ""))


def test_the_shipped_job_tables_have_the_rows_traces_md_states() -> None:
    page = (ROOT / "docs" / "traces.md").read_text()
    philly, _ = load_philly_csv(EMBEDDED / "philly_jobs.csv.gz")
    venus, _ = load_helios_jobs(EMBEDDED / "helios_venus_gpu_jobs.csv.gz")
    pai, _ = load_pai_jobs(EMBEDDED / "pai_gpu_jobs_sample_6000.csv.gz")
    assert _number(page, r"`philly_jobs.csv` \(([\d,]+) jobs") == len(philly)
    assert _number(page, r"`helios_venus_gpu_jobs.csv` \(([\d,]+) jobs") == len(venus)
    assert _number(page, r"column `capped`, ([\d,]+) jobs") == int(venus["capped"].sum())
    assert _number(page, r"`pai_gpu_jobs_sample_6000.csv` \(([\d,]+) jobs") == len(pai)
    assert _number(page, r"fractional for ([\d,]+) of the sample") == int((pai["gpu_request"] % 1 != 0).sum())


def test_the_readmes_default_board_and_the_environments_metric_count() -> None:
    readme = (ROOT / "README.md").read_text()
    cells = load_board("default").cells
    assert _number(readme, r"default leaderboard: (\w+) reference policies") == len({c.policy for c in cells})
    assert _number(readme, r"# (\d+) cells, about") == len(cells)
    env = gym.make("gpucluster_env/Tiny-v1")
    env.reset(seed=0)
    done, info = False, {}
    while not done:  # FIFO's first legal action until the episode ends
        _, _, term, trunc, info = env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))
        done = term or trunc
    env_page = (ROOT / "docs" / "environment.md").read_text()
    assert _number(env_page, r"\((\d+) keys on\s+`Tiny-v1`") == len(info["metrics"])
    assert set(info["metrics"]) <= set(METRICS)


def test_the_loaded_months_fifo_figures_on_the_performance_page() -> None:
    """docs/performance.md describes `philly-loaded` by FIFO's run on seed 0 (its queueing and occupancy; FIFO
    is the yardstick of every ratio there): the run gives them today."""
    from gpucluster_env.policy import run_episode

    page = " ".join((ROOT / "docs" / "performance.md").read_text().split())
    result = run_episode("philly-loaded", "fifo", 0)
    m = re.search(r"seed 0: FIFO waits ([\d.]+) days on average", page)
    assert m, "the page no longer states FIFO's queueing on philly-loaded"
    assert f"{result['avg_queue_s'] / 86400:.1f}" == m.group(1)
    m = re.search(r"GPU occupancy (\d+)%\)", page)
    assert m and f"{100 * result['gpu_occupancy']:.0f}" == m.group(1)
