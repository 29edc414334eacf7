"""Gavel's measured solo throughputs, used by the engine where they exist (as the measured pairs are for xi).

Gavel (Narayanan et al., OSDI'20) measured the steps/s of each of its 26 job types (7 model families at their
batch sizes) alone on 1, 2, 4 and 8 K80, P100 and V100 GPUs, on as few servers as possible ("consolidated")
and spread over servers ("unconsolidated"): ``profiles/gavel/simulation_throughputs.json`` (MIT licence,
Stanford Future Data Systems; the file Gavel's simulator reads). The shipped table
``gpucluster_env/data/gavel_solo.json`` holds those numbers as measured (steps/s summed over the job's GPUs,
Gavel's unit), keyed by catalog model, batch and GPU count; ``gpucluster catalog fit-solo`` writes it from the
file.

How the engine uses it (:meth:`MeasuredSolo.iter_s`, :func:`gpucluster_env.performance.solo_iter_time` with
``scale``):

* a job of a Gavel model at a measured batch on ``n`` GPUs of one measured type runs one iteration (a step of
  every worker) in ``n / steps_per_s`` seconds alone: the performance model's constants of that copy are
  scaled by ``measured / modelled`` (Castor eq. 1-3 are homogeneous of degree 1 in compute and all-reduce
  time, so interference, MPS shares and accumulation act on the measured time as on the modelled one);
  consolidated numbers when the gang sits on the fewest nodes its type allows, unconsolidated otherwise
  (Gavel measured both: LM at batch 80 on 8 V100s runs 231 steps/s consolidated, 48 spread; Gavel's
  simulator itself reads only the consolidated ones, ``MeasuredSolo(placement_blind=True)``);
* a measured **zero** (Gavel could not run that configuration, e.g. ResNet-50 at batch 128 on 2, 4 or 8
  K80s: out of memory) means the job cannot run there: the engine masks that GPU type for the job (as when
  its memory does not fit) and refuses a placement on it;
* everything else (other models, batches, GPU types, mixed-type gangs) keeps the fitted model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .measured import GAVEL_TYPES, _positive, require_data_dir, split_job_key
from .xi_model import package_json

SOLO_FILE = "gavel_solo.json"

GAVEL_FAMILY_MODEL: dict[str, str] = {
    "ResNet-18": "resnet18",
    "ResNet-50": "resnet50",
    "Transformer": "transformer",
    "LM": "lm",
    "Recommendation": "recommendation",
    "CycleGAN": "cyclegan",
    "A3C": "a3c",
}
"""Gavel job-type family -> catalog model name (the models of Gavel's traces)."""

SOLO_SOURCE = ("Gavel simulation_throughputs.json (Narayanan et al., OSDI'20; MIT licence, Stanford Future Data "
               "Systems): solo steps/s summed over the job's GPUs, as measured; 0 = Gavel measured no throughput")


def solo_key(model: str, batch: int, n_gpus: int) -> str:
    """The table's key of one configuration: ``"resnet50|64|4"``."""
    return f"{model}|{int(batch)}|{int(n_gpus)}"


def _job_config(job_type: str) -> tuple[str, int] | None:
    """Gavel job type -> (catalog model, per-GPU batch; 1 for batchless types), None for unknown families."""
    family, _, rest = job_type.partition(" (batch size ")
    model = GAVEL_FAMILY_MODEL.get(family)
    if model is None:
        return None
    return model, int(rest.rstrip(")")) if rest else 1


def build_solo_table(path: Path | None = None) -> dict[str, Any]:
    """The shipped table from Gavel's throughput file: ``{"consolidated": {type: {key: steps/s}},
    "unconsolidated": {...}, "source": ...}`` for the catalog's K80, P100 and V100."""
    path = path or require_data_dir() / "profiles" / "gavel" / "simulation_throughputs.json"
    try:
        raw = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    out: dict[str, Any] = {"source": SOLO_SOURCE, "consolidated": {}, "unconsolidated": {}}
    for layout, suffix in (("consolidated", ""), ("unconsolidated", "_unconsolidated")):
        for gkey, ours in GAVEL_TYPES.items():
            block = raw.get(gkey + suffix)
            if not isinstance(block, dict):
                raise ValueError(f"{path}: missing GPU type {gkey + suffix!r}")
            table: dict[str, float] = {}
            for key, entry in block.items():
                job, scale = split_job_key(key, path)
                cfg = _job_config(job)
                if cfg is None:
                    continue
                if not isinstance(entry, dict) or "null" not in entry:
                    raise ValueError(f"{path}: {gkey + suffix}/{key}: missing field 'null' (solo throughput)")
                table[solo_key(cfg[0], cfg[1], scale)] = _positive(entry["null"], path, f"{gkey}/{key}/null")
            out[layout][ours] = dict(sorted(table.items()))
    return out


def _cached_package_table() -> dict[str, Any] | None:
    return package_json(SOLO_FILE)


class MeasuredSolo:
    """Gavel's measured solo throughputs by configuration (module doc); an empty table measures nothing."""

    def __init__(self, table: dict[str, Any] | None = None, enabled: bool = True,
                 placement_blind: bool = False) -> None:
        """``table``: as :func:`build_solo_table` returns (default: the shipped one); ``enabled`` False: use
        the fitted model everywhere (the catalog before measured solo times); ``placement_blind``: the
        consolidated numbers wherever a gang sits, as Gavel's simulator assumes (it reads only the consolidated
        entries), instead of the unconsolidated ones for a gang spread over more nodes than it needs."""
        table = (_cached_package_table() if table is None else table) if enabled else {}
        table = table or {}
        self.consolidated: dict[str, dict[str, float]] = table.get("consolidated", {})
        self.unconsolidated: dict[str, dict[str, float]] = (
            self.consolidated if placement_blind else table.get("unconsolidated", {}))

    def steps_per_s(self, model: str, batch: int, gpu_type: str, n_gpus: int, consolidated: bool = True
                    ) -> float | None:
        """Gavel's measured steps/s (summed over the GPUs) of the configuration; None where not measured."""
        layout = self.consolidated if consolidated else self.unconsolidated
        return layout.get(gpu_type, {}).get(solo_key(model, batch, n_gpus))

    def iter_s(self, model: str, batch: int, gpu_type: str, n_gpus: int, consolidated: bool = True
               ) -> float | None:
        """Seconds per iteration (one step of every worker) alone: ``n / steps_per_s``; ``inf`` where Gavel
        measured zero (the job cannot run there); None where not measured."""
        tput = self.steps_per_s(model, batch, gpu_type, n_gpus, consolidated)
        if tput is None:
            return None
        return n_gpus / tput if tput > 0 else math.inf
