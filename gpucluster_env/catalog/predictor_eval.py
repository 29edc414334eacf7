"""Held-out evaluation of Castor's interference predictor (:mod:`.predictor`).

Two splits, per GPU type (Gavel's K80/P100/V100 and, with Lucid's files, the RTX 3090):

* **by pair** (Castor §6.2): unordered pairs split 80:20 per seed (Lucid's by model pair, every batch/AMP
  configuration of the two models together); the question Castor's paper answers.
* **by model**: every pair of one model (a Gavel family, or a Lucid model) held out at once, the predictor
  trained on the others; the question a scenario asks whose models were never measured on its GPU (Castor's
  Pollux-recipe jobs on the A6000, where Lucid measured none of BERT, DeepSpeech2, YOLOv3 or ResNet-50).

In both, signatures, the linear baseline and the trees see the training pairs only. ``baseline=False`` trains
the trees alone (no base margin), to measure what the baseline brings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .lucid_pairs import LUCID_TYPE, LucidData, lucid_model
from .measured import GavelData, job_family
from .predictor import (
    WORK_RATIOS,
    _baseline_weights,
    _design,
    _predict_raw,
    _rows,
    _split_key,
    _train,
    _types,
    combine,
    share_decision,
    signatures,
)

Row = tuple[str, str, float]


def _fit_predict(gd: GavelData, gpu: str, tr: list[Row], te: list[Row], ld: LucidData | None, seed: int,
                 baseline: bool) -> np.ndarray:
    """Predicted xi of the test rows (both orders of each test pair are in ``te``) after training on ``tr``."""
    sig = signatures(tr)
    weights = _baseline_weights(gd, {gpu: tr}, ld) if baseline else None
    bst = _train(*_design(gd, gpu, tr, sig, True, ld, weights), seed)
    x_te, _, _, m_te = _design(gd, gpu, te, sig, False, ld, weights)
    pos = {(a, b): i for i, (a, b, _) in enumerate(te)}
    return combine(_predict_raw(bst, x_te, m_te), np.array([pos[(b, a)] for a, b, _ in te]))


def _scores(te: list[Row], pred: np.ndarray, xi: dict[tuple[str, str], float]) -> dict[str, float]:
    true = np.array([max(1.0, r[2]) for r in te])
    p_of = {(a, b): p for (a, b, _), p in zip(te, pred, strict=True)}
    agree = []
    for a, b in sorted({tuple(sorted(r[:2])) for r in te}):
        ta, tb = max(1.0, xi[(a, b)]), max(1.0, xi[(b, a)])
        pa, pb = p_of[(a, b)], p_of[(b, a)]
        for w in WORK_RATIOS:
            agree.append(share_decision(ta, tb, 1.0, w) == share_decision(pa, pb, 1.0, w))
    return {"rmse": float(np.sqrt(np.mean((pred - true) ** 2))),
            "mape_median": float(np.median(np.abs(pred - true) / true)),
            "decision_agreement": float(np.mean(agree))}


def _summarize(parts: list[dict[str, Any]]) -> dict[str, float]:
    return {k: float(np.mean([s[k] for s in parts])) for k in ("rmse", "mape_median", "decision_agreement")}


def evaluate(gd: GavelData, seeds: Sequence[int] = (0, 1, 2, 3, 4), test_frac: float = 0.2,
             ld: LucidData | None = None, baseline: bool = True) -> dict[str, Any]:
    """Held out by pair (module doc): per type the RMSE, median absolute percentage error and decision
    agreement (Theorem 1 at :data:`.predictor.WORK_RATIOS`), averaged over seeds, plus each seed's values."""
    out: dict[str, Any] = {}
    for gpu in _types(gd, ld):
        rows = _rows(gd, gpu, ld)
        xi = {(a, b): x for a, b, x in rows}
        pairs = sorted({_split_key(a, b, gpu) for a, b, _ in rows})
        per_seed = []
        for seed in seeds:
            perm = np.random.default_rng(seed).permutation(len(pairs))
            test = {pairs[i] for i in perm[:int(round(test_frac * len(pairs)))]}
            tr = [r for r in rows if _split_key(r[0], r[1], gpu) not in test]
            te = [r for r in rows if _split_key(r[0], r[1], gpu) in test]
            per_seed.append({**_scores(te, _fit_predict(gd, gpu, tr, te, ld, seed, baseline), xi),
                             "test_pairs": len(test)})
        out[gpu] = {**_summarize(per_seed), "seeds": per_seed}
    return out


def _model_of(gpu: str) -> Callable[[str], str]:
    return lucid_model if gpu == LUCID_TYPE else job_family


def evaluate_by_model(gd: GavelData, ld: LucidData | None = None, baseline: bool = True,
                      seed: int = 0) -> dict[str, Any]:
    """Held out by model (module doc): per type the mean over models of each model's scores, and each
    model's own, with how many of its ordered pairs were scored."""
    out: dict[str, Any] = {}
    for gpu in _types(gd, ld):
        rows = _rows(gd, gpu, ld)
        xi = {(a, b): x for a, b, x in rows}
        model = _model_of(gpu)
        per_model = {}
        for m in sorted({model(a) for a, _, _ in rows}):
            te = [r for r in rows if m in (model(r[0]), model(r[1]))]
            tr = [r for r in rows if m not in (model(r[0]), model(r[1]))]
            pred = _fit_predict(gd, gpu, tr, te, ld, seed, baseline)
            per_model[m] = {**_scores(te, pred, xi), "rows": len(te)}
        out[gpu] = {**_summarize(list(per_model.values())), "models": per_model}
    return out

