"""Every metric is declared once (gpucluster_env/engine/metric_specs.py): the engine returns exactly the declared
engine metrics, the leaderboard ranks by the declaration, and the glossary names every metric."""

from __future__ import annotations

import re
from pathlib import Path

from gpucluster_env.leaderboard.cells import SB_METRICS
from gpucluster_env.leaderboard.stats import lower_is_better

from gpucluster_env.engine.build import make_engine
from gpucluster_env.engine.metric_specs import METRICS, engine_metrics
from gpucluster_env.engine.metrics import episode_metrics
from gpucluster_env.scenarios import get_scenario

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"


def test_the_engine_returns_exactly_the_declared_engine_metrics() -> None:
    assert tuple(episode_metrics(make_engine(get_scenario("tiny"), 0))) == engine_metrics()
    assert SB_METRICS == ("sb_median", "sb_frac_gt1", "sb_decisions")


def test_the_leaderboard_ranks_by_the_declaration() -> None:
    assert not lower_is_better("sm_activity_est") and not lower_is_better("deadline_satisfaction")
    assert lower_is_better("avg_jct_s") and lower_is_better("gimbal_attempts")  # undeclared: a policy's count
    assert all(lower_is_better(n) != m.higher_is_better for n, m in METRICS.items())


def test_the_glossary_names_every_metric() -> None:
    text = GLOSSARY.read_text()
    missing = [n for n in METRICS if not re.search(rf"`{re.escape(n)}`", text)]
    assert not missing, f"docs/glossary.md does not name: {missing}"


def test_the_glossary_holds_the_declared_table() -> None:
    from gpucluster_env.engine.metric_specs import metrics_markdown

    assert metrics_markdown() in GLOSSARY.read_text()
