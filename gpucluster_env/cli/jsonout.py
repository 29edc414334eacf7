"""JSON output for ``--json``: NaN and infinities become null (strict JSON), numpy scalars plain numbers."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating | float):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def dumps(obj: Any) -> str:
    """Strict JSON text of ``obj``."""
    return json.dumps(_clean(obj), allow_nan=False)
