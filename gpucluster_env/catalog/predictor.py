"""Castor's interference-ratio predictor (castor §6): an XGBoost regressor of xi for each job of a pair.

Agents use it; the engine keeps the truth (:mod:`.xi_model`). Inputs are the two jobs' feature vectors and the
GPU type's specs, never the pair's identity. A job's vector holds its hardware indicators (compute intensity,
memory intensity, communication share, GPU demand: :class:`~gpucluster_env.workloads.ModelProfile`), its log
solo step time on the GPU type and log batch size, and -- the analogue of Castor's profiled DCGM counters --
a contention signature learned from the training pairs only: the job type's mean log xi suffered
(sensitivity) and inflicted (aggressiveness) against its training partners, and the mean log xi of its family
against the partner's family. Jobs without measurements get missing values there (XGBoost's default branch;
the training set holds masked copies of every row so that branch is learned), and GPU types without
measurements use the signatures pooled over K80/P100/V100.

Each job also carries its solo-throughput profile across the three measured generations, log(tput_K80 /
tput_V100) and log(tput_P100 / tput_V100) (memory-bound jobs such as Gavel's Recommendation run faster on
K80/P100 than on V100; Castor profiles each job once, so this is job-level, never pair-level, information).

Three boosted models are trained on the same inputs: log xi_a; the pair's combined normalized throughput
log(1/xi_a + 1/xi_b); and the split log(xi_a / xi_b). The first is per job, the other two describe the pair as
a whole, which is what Castor's share/don't-share rule (Theorem 1) turns on; they are evaluated in both orders
and symmetrized, so ``xi_a, xi_b`` rebuilt from them satisfy the pair's symmetry exactly. The prediction is the
geometric mean of the direct and the rebuilt xi_a, clipped to >= 1. ``gpucluster catalog fit-interference`` trains it on
every measured Gavel pair and saves it to ``gpucluster_env/data/xi_predictor.json`` with its held-out
evaluation (80:20 by pair, several seeds). xgboost is imported inside functions only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..performance import compute_time, memory_intensity
from ..workloads import ModelProfile
from .lucid_pairs import LUCID_MODEL, LUCID_TYPE, LucidData, catalog_key, config_of, lucid_model, on_ga102
from .measured import GavelData, job_batch, job_family
from .xi_model import regression_log_xi, regression_terms

PREDICTOR_FILE = "xi_predictor.json"
JOB_FEATURES = ("ci", "mem", "comm", "demand", "log_step", "log_batch", "sens", "aggr", "log_k80_rel",
                "log_p100_rel")
FEATURE_NAMES = tuple(f"{p}_{f}" for p in ("a", "b") for f in JOB_FEATURES) + (
    "family_pair", "gpu_tflops", "gpu_mem_bw", "gpu_memory")
XGB_PARAMS = {"max_depth": 6, "eta": 0.05, "subsample": 0.9, "colsample_bytree": 0.7, "nthread": 2}
XGB_ROUNDS = 300
TARGETS = ("log_xi", "log_total", "log_split")
"""The three boosters: log xi_a; log(1/xi_a + 1/xi_b); log(xi_a / xi_b) (see the module docstring)."""
MASK_WEIGHT = 0.25
"""Sample weight of the signature-masked copies of the training rows (they teach XGBoost's missing-value
branch, used for jobs without measurements, without drowning the signatures)."""
WORK_RATIOS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Work ratios ``t_B i_B / t_A i_A`` at which share/don't-share decisions are compared."""


def share_decision(xi_a: np.ndarray, xi_b: np.ndarray, work_a: np.ndarray, work_b: np.ndarray) -> np.ndarray:
    """Castor Theorem 1: True where running the pair concurrently gives a lower mean JCT than running it
    sequentially (shorter first). ``work_*`` are solo run times ``t i``."""
    xi_a, xi_b, wa, wb = (np.asarray(v, float) for v in (xi_a, xi_b, work_a, work_b))
    lo, hi = np.minimum(wa, wb), np.maximum(wa, wb)
    seq = (2 * lo + hi) / 2
    ta, tb = xi_a * wa, xi_b * wb
    a_first = ta <= tb
    # the first to finish ends at its slowed time; the other then runs alone for the rest
    first = np.where(a_first, ta, tb)
    rest = np.where(a_first, wb - ta / xi_b, wa - tb / xi_a)
    conc = (2 * first + rest) / 2
    return conc < seq


# ---------------------------------------------------------------- contention signatures (training split only)
def signatures(rows: Sequence[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """Sensitivity, aggressiveness per job type and family-pair means, from ``(a, b, xi_a)`` training rows."""
    sens: dict[str, list[float]] = {}
    aggr: dict[str, list[float]] = {}
    fam: dict[str, list[float]] = {}
    for a, b, x in rows:
        lx = math.log(x)
        sens.setdefault(a, []).append(lx)
        aggr.setdefault(b, []).append(lx)
        fam.setdefault(f"{job_family(a)}|{job_family(b)}", []).append(lx)
    mean = lambda d: {k: float(np.mean(v)) for k, v in d.items()}  # noqa: E731
    return {"sens": mean(sens), "aggr": mean(aggr), "family": mean(fam)}


def pool_signatures(per_gpu: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Signatures averaged over GPU types (for types without measurements)."""
    out: dict[str, dict[str, float]] = {}
    for part in ("sens", "aggr", "family"):
        keys = {k for s in per_gpu.values() for k in s[part]}
        out[part] = {k: float(np.mean([s[part][k] for s in per_gpu.values() if k in s[part]])) for k in keys}
    return out


@dataclass(frozen=True)
class Job:
    """A job as the predictor sees it: hardware indicators, solo step time, batch, and (if measured) the Gavel
    job type whose signature it carries."""

    ci: float
    mem: float
    comm: float
    demand: float
    step_s: float
    batch: float
    gavel_job: str | None
    k80_rel: float = math.nan
    p100_rel: float = math.nan


def job_vector(j: Job, sig: dict[str, dict[str, float]] | None) -> list[float]:
    nan = math.nan
    s = sig["sens"].get(j.gavel_job, nan) if sig and j.gavel_job else nan
    g = sig["aggr"].get(j.gavel_job, nan) if sig and j.gavel_job else nan
    return [j.ci, j.mem, j.comm, j.demand, math.log(j.step_s), math.log2(max(j.batch, 1.0)), s, g, j.k80_rel,
            j.p100_rel]


def pair_vector(a: Job, b: Job, sig: dict[str, dict[str, float]] | None, gpu: tuple[float, float, float]
                ) -> list[float]:
    fp = math.nan
    if sig and a.gavel_job and b.gavel_job:
        fp = sig["family"].get(f"{job_family(a.gavel_job)}|{job_family(b.gavel_job)}", math.nan)
    return job_vector(a, sig) + job_vector(b, sig) + [fp, *gpu]


def gpu_specs(gpu_type: str) -> tuple[float, float, float]:
    from . import default_catalog

    g = default_catalog().gpu_type(gpu_type)
    return (g.fp32_tflops, g.mem_bw_gbps, g.memory_gb)


def gavel_job(gd: GavelData, job_type: str, gpu: str) -> Job:
    """A Gavel job type as a :class:`Job`: features of the catalog model of its family, measured solo time."""
    from .fit import FAMILY_MODEL
    from .models import MODELS

    p = MODELS[FAMILY_MODEL[job_family(job_type)]]
    bs = float(job_batch(job_type) or 1)
    mem = memory_intensity(p.mem_base_gb, p.mem_per_sample_gb, bs)
    step = 1.0 / gd.solo[gpu][(job_type, 1)]
    rel = [math.log(gd.solo[h][(job_type, 1)] / gd.solo["V100"][(job_type, 1)]) for h in ("K80", "P100")]
    return Job(p.features[0], mem, p.features[2], p.gpu_demand, step, bs, job_type, *rel)


def lucid_job(ld: LucidData, key: str) -> Job:
    """A Lucid RTX 3090 configuration as a :class:`Job`: features of the catalog model it maps to, its measured
    demand (solo ``gpu_util``) and solo step time (batch / samples per s); no K80/P100 profile."""
    from .models import MODELS

    p = MODELS[LUCID_MODEL[lucid_model(key)][0]]
    bs = float(config_of(key)[0])
    mem = memory_intensity(p.mem_base_gb, p.mem_per_sample_gb, bs)
    return Job(p.features[0], mem, p.features[2], ld.demand(key), bs / ld.solo[key]["speed"], bs, key)


def catalog_job(p: ModelProfile, gpu_type: str, batch: float | None = None) -> Job:
    """A catalog model as a :class:`Job` on ``gpu_type`` (solo step time from the catalog's speed). On the GA102
    types it is described as Lucid's RTX 3090 jobs were (its demand on the type, its Lucid configuration's
    signature, no K80/P100 profile); elsewhere as Gavel's (reference demand, Gavel job type)."""
    from . import default_catalog
    from .fit import GAVEL_JOB

    cat = default_catalog()
    bs = float(p.batch_size if batch is None else batch)
    mem = memory_intensity(p.mem_base_gb, p.mem_per_sample_gb, bs)
    step = max(float(compute_time(p, bs, cat.model_speed(p, gpu_type))), 1e-6)
    if on_ga102(gpu_type):
        return Job(p.features[0], mem, p.features[2], cat.model_demand(p, gpu_type), step, bs, catalog_key(p.name))
    rel = [math.log(cat.model_speed(p, h) / cat.model_speed(p, "V100")) for h in ("K80", "P100")]
    return Job(p.features[0], mem, p.features[2], p.gpu_demand, step, bs, GAVEL_JOB.get(p.name), *rel)


# ---------------------------------------------------------------- training and evaluation
def _jobs(gd: GavelData, ld: LucidData | None, gpu: str) -> dict[str, Job]:
    if gpu == LUCID_TYPE and ld is not None:
        return {k: lucid_job(ld, k) for k in ld.solo}
    return {j: gavel_job(gd, j, gpu) for j in gd.job_types(gpu)}


def _types(gd: GavelData, ld: LucidData | None) -> list[str]:
    return sorted(gd.pairs) + ([LUCID_TYPE] if ld is not None else [])


def _split_key(a: str, b: str, gpu: str) -> tuple[str, str]:
    """The unit a held-out split keeps together: Gavel's job-type pair; Lucid's model pair (every batch/AMP
    configuration of the two models)."""
    if gpu == LUCID_TYPE:
        return tuple(sorted((lucid_model(a), lucid_model(b))))  # type: ignore[return-value]
    return tuple(sorted((a, b)))  # type: ignore[return-value]


def baseline_row(a: Job, b: Job) -> list[float]:
    """The demand regression's terms for ``xi_a`` (:func:`.xi_model.regression_terms`) from what the predictor
    knows of the two jobs."""
    return regression_terms(a.ci, a.mem, b.mem, a.demand, b.demand)


def fit_baseline(pairs: Sequence[tuple[Job, Job]], log_xi: Sequence[float]) -> list[float]:
    """Least-squares weights of ``log xi_a`` on :func:`baseline_row` over training pairs: the linear part of
    the predictor, which extrapolates with the pair's excess demand where the trees have seen no such pair."""
    x = np.array([baseline_row(a, b) for a, b in pairs], float)
    w, *_ = np.linalg.lstsq(x, np.asarray(log_xi, float), rcond=None)
    return [round(float(v), 9) for v in w]  # as saved: the margins trained on are those predicted with


def margins(pairs: Sequence[tuple[Job, Job]], weights: Sequence[float]) -> np.ndarray:
    """The baseline's value of each target (:data:`TARGETS`) per ordered pair, ``(n, 3)``: the boosters learn
    the residual over it (XGBoost's base margin). Summed term by term in Python floats (no BLAS product)."""
    out = []
    for a, b in pairs:
        la = max(0.0, regression_log_xi(weights, baseline_row(a, b)))
        lb = max(0.0, regression_log_xi(weights, baseline_row(b, a)))
        out.append([la, math.log(math.exp(-la) + math.exp(-lb)), la - lb])
    return np.array(out, float).reshape(-1, len(TARGETS))


def _design(gd: GavelData, gpu: str, rows: Sequence[tuple[str, str, float]], sig: dict, mask_copies: bool,
            ld: LucidData | None = None, weights: Sequence[float] | None = None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Inputs, the three labels (columns in :data:`TARGETS` order; the pair labels need both orders of every
    row's pair in ``rows``, true of a split by unordered pair), sample weights and the baseline's margins
    (zeros without ``weights``)."""
    specs = gpu_specs(gpu)
    jobs = _jobs(gd, ld, gpu)
    xi = {(a, b): max(v, 1.0) for a, b, v in rows}
    x = [pair_vector(jobs[a], jobs[b], sig, specs) for a, b, _ in rows]
    y = [[math.log(xi[(a, b)]), math.log(1 / xi[(a, b)] + 1 / xi.get((b, a), xi[(a, b)])),
          math.log(xi[(a, b)] / xi.get((b, a), xi[(a, b)]))] for a, b, _ in rows]
    w = [1.0] * len(rows)
    m = (margins([(jobs[a], jobs[b]) for a, b, _ in rows], weights) if weights is not None
         else np.zeros((len(rows), len(TARGETS))))
    if mask_copies:
        x += [pair_vector(jobs[a], jobs[b], None, specs) for a, b, _ in rows]
        y += y
        w += [MASK_WEIGHT] * len(rows)
        m = np.vstack([m, m])
    return np.array(x, float), np.array(y, float), np.array(w, float), m


def _baseline_weights(gd: GavelData, gpu_rows: dict[str, Sequence[tuple[str, str, float]]],
                      ld: LucidData | None) -> list[float]:
    """:func:`fit_baseline` over the given rows of each GPU type."""
    pairs, y = [], []
    for gpu, rows in gpu_rows.items():
        jobs = _jobs(gd, ld, gpu)
        pairs += [(jobs[a], jobs[b]) for a, b, _ in rows]
        y += [math.log(max(v, 1.0)) for _, _, v in rows]
    return fit_baseline(pairs, y)


def _train(x: np.ndarray, y: np.ndarray, w: np.ndarray, m: np.ndarray, seed: int) -> list[Any]:
    import xgboost as xgb

    return [xgb.train({**XGB_PARAMS, "seed": seed}, xgb.DMatrix(x, y[:, k], weight=w, base_margin=m[:, k]),
                      XGB_ROUNDS) for k in range(len(TARGETS))]


def combine(raw: np.ndarray, mirror: np.ndarray) -> np.ndarray:
    """Predicted xi (>= 1) per row from the boosters' raw outputs ``raw`` (n, 3); ``mirror[i]`` is the row of
    the same pair in the other order."""
    total = 0.5 * (np.exp(raw[:, 1]) + np.exp(raw[mirror, 1]))
    split = 0.5 * (raw[:, 2] - raw[mirror, 2])
    rebuilt = (1.0 + np.exp(split)) / total
    return np.maximum(1.0, np.exp(0.5 * (np.log(np.maximum(rebuilt, 1e-9)) + raw[:, 0])))


def _predict_raw(boosters: Sequence[Any], x: np.ndarray, m: np.ndarray) -> np.ndarray:
    import xgboost as xgb

    # one thread, as the loaded boosters: see XiPredictor
    return np.stack([b.predict(xgb.DMatrix(x, base_margin=m[:, k], nthread=1)) for k, b in enumerate(boosters)],
                    axis=1)


def _rows(gd: GavelData, gpu: str, ld: LucidData | None = None) -> list[tuple[str, str, float]]:
    src = ld.xi if gpu == LUCID_TYPE and ld is not None else gd.xi(gpu)
    return [(a, b, x) for (a, b), x in sorted(src.items())]


def fit_predictor(gd: GavelData, seed: int = 0, ld: LucidData | None = None) -> dict[str, Any]:
    """Train on every measured pair of every GPU type (Gavel's, and Lucid's RTX 3090 when ``ld`` is given):
    first the linear baseline (:func:`fit_baseline`), then the boosters on the residual; returns the JSON-able
    saved form (baseline weights, boosters and per-job-type mean signatures: no measured row)."""
    rows = {gpu: _rows(gd, gpu, ld) for gpu in _types(gd, ld)}
    weights = _baseline_weights(gd, rows, ld)
    sigs = {gpu: signatures(r) for gpu, r in rows.items()}
    parts = [_design(gd, gpu, rows[gpu], sigs[gpu], True, ld, weights) for gpu in rows]
    bst = _train(*(np.vstack([p[k] for p in parts]) if k != 2 else np.concatenate([p[k] for p in parts])
                   for k in range(4)), seed)
    return {
        "about": "Castor-style XGBoost predictor of log xi (gpucluster_env.catalog.predictor), trained on "
                 "Gavel's measured colocated pairs (Narayanan et al., OSDI'20)"
                 + ("" if ld is None else " and Lucid's RTX 3090 pairs (Hu et al., ASPLOS'23; S-Lab License 1.0, "
                    "non-commercial: only the fitted trees and per-job-type mean signatures are stored)") + ".",
        "feature_names": list(FEATURE_NAMES),
        "signatures": sigs,
        "pooled_signatures": pool_signatures(sigs),
        "targets": list(TARGETS),
        "baseline": weights,
        "boosters": [bytes(b.save_raw("json")).decode() for b in bst],
    }


# ---------------------------------------------------------------- the loaded predictor
class XiPredictor:
    """A trained predictor; :meth:`predict_pair` gives ``(xi_a, xi_b)`` for two catalog models on a GPU
    type."""

    def __init__(self, saved: dict[str, Any]) -> None:
        import xgboost as xgb

        for key in ("baseline", "boosters", "signatures", "pooled_signatures", "feature_names"):
            if key not in saved:
                raise ValueError(f"{PREDICTOR_FILE}: missing field {key!r}")
        if list(saved["feature_names"]) != list(FEATURE_NAMES):
            raise ValueError(f"{PREDICTOR_FILE}: field 'feature_names' does not match this version; "
                             "refit with `gpucluster catalog fit-interference`")
        if list(saved.get("targets", [])) != list(TARGETS) or len(saved["boosters"]) != len(TARGETS):
            raise ValueError(f"{PREDICTOR_FILE}: field 'targets' does not match this version; "
                             "refit with `gpucluster catalog fit-interference`")
        self.boosters = []
        for text in saved["boosters"]:
            b = xgb.Booster()
            b.load_model(bytearray(text.encode()))
            # One thread: the few rows a policy or the observation asks for cost ~0.01 s instead of ~0.3 s of
            # thread start-up on a busy 2-core machine; a row's prediction does not depend on the threads.
            b.set_param({"nthread": 1})
            self.boosters.append(b)
        self.baseline: list[float] = [float(v) for v in saved["baseline"]]
        self.signatures: dict[str, dict] = saved["signatures"]
        self.pooled: dict = saved["pooled_signatures"]
        self.evaluation: dict[str, Any] = saved.get("evaluation", {})

    def _sig(self, gpu_type: str) -> dict:
        if on_ga102(gpu_type) and LUCID_TYPE in self.signatures:
            return self.signatures[LUCID_TYPE]
        return self.signatures.get(gpu_type, self.pooled)

    def predict_many(self, pairs: Sequence[tuple[ModelProfile, ModelProfile]], gpu_type: str,
                     batches: Sequence[tuple[float, float]] | None = None) -> np.ndarray:
        """``(n, 2)`` array of predicted ``(xi_a, xi_b)`` (each >= 1) for ``n`` pairs on ``gpu_type``."""
        specs = gpu_specs(gpu_type)
        sig = self._sig(gpu_type)
        rows, jobs = [], []
        for i, (a, b) in enumerate(pairs):
            ba, bb = batches[i] if batches is not None else (None, None)
            ja, jb = catalog_job(a, gpu_type, ba), catalog_job(b, gpu_type, bb)
            rows.append(pair_vector(ja, jb, sig, specs))
            rows.append(pair_vector(jb, ja, sig, specs))
            jobs += [(ja, jb), (jb, ja)]
        if not rows:
            return np.ones((0, 2))
        mirror = np.arange(len(rows)) ^ 1  # rows come in (a, b), (b, a) couples
        raw = _predict_raw(self.boosters, np.array(rows, float), margins(jobs, self.baseline))
        pred = combine(raw, mirror)
        return pred.reshape(-1, 2)

    def predict_pair(
        self, model_a: ModelProfile, model_b: ModelProfile, gpu_type: str
    ) -> tuple[float, float]:
        """Predicted free-competition ``(xi_a, xi_b)`` of two models sharing a ``gpu_type`` GPU."""
        xa, xb = self.predict_many([(model_a, model_b)], gpu_type)[0]
        return float(xa), float(xb)


def load_predictor(path: Path | str | None = None) -> XiPredictor:
    """The saved predictor (``gpucluster_env/data/xi_predictor.json`` unless ``path`` is given)."""
    try:
        if path is None:
            text = resources.files("gpucluster_env").joinpath("data", PREDICTOR_FILE).read_text()
        else:
            text = Path(path).read_text()
    except FileNotFoundError:
        where = path or PREDICTOR_FILE
        raise ValueError(f"{where}: not found; run `gpucluster catalog fit-interference`") from None
    try:
        saved = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path or PREDICTOR_FILE}: not valid JSON ({e.msg})") from None
    return XiPredictor(saved)
