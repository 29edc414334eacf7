"""The inputs of the compiled observation and mask kernel (:mod:`gpucluster_env.env.kernel`), in three named
bundles built once per engine state by :func:`kernel_inputs`:

* :class:`Tables`: what stays fixed through an episode (the layout, per-job constants, the observation's
  static rows and lookup tables);
* :class:`State`: the engine's own arrays (and the environment's per-job GPU records), which actions and the
  clock change in place, so the kernel reads them as they are at each call;
* :class:`Out`: the observation buffer, the mask and the per-slot ``placeable`` flags the kernel writes.

Each bundle is a numba struct (``numba.experimental.structref``): one argument to compiled code, its fields read
by name there, and one cheap argument to pass from Python (a call with the 40-odd arrays as separate arguments
spent more time in numba's argument checks than the bundles do).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

from gpucluster_env.engine import ClusterEngine
from gpucluster_env.env.codec import ActionLayout
from gpucluster_env.env.observation import ObservationBuilder

# Fields of the int64 ``layout`` vector (in :class:`Tables`).
(L_N, L_M, L_K, L_T, L_PLACE, L_COLOC, L_SQUEEZE, L_SWELL, L_PREEMPT, L_ALLOW_PLACE, L_ALLOW_COLOC, L_ALLOW_SQUEEZE,
 L_ALLOW_SWELL, L_ALLOW_PREEMPT, L_PW, L_SHARE, L_COMPACT, L_SIZE) = range(18)


def layout_vector(L: ActionLayout, allow: frozenset[str]) -> np.ndarray:
    """The ``layout`` of :class:`Tables` for action layout ``L``: window sizes, mask offsets (place, colocate,
    squeeze, swell, preempt), which action kinds the environment exposes (``allow``), the number of place columns
    per pending slot, the share block's offset and whether the layout is the compact one (a share block, no
    colocate block)."""
    v = np.zeros(L_SIZE, dtype=np.int64)
    v[L_N], v[L_M], v[L_K], v[L_T], v[L_PW] = L.n_pending, L.n_running, L.n_accum, L.n_types, L.place_width
    v[L_SHARE], v[L_COMPACT] = L.share_off, L.compact
    v[L_PLACE:L_PREEMPT + 1] = L.place_off, L.colocate_off, L.squeeze_off, L.swell_off, L.preempt_off
    for i, kind in enumerate(("place", "colocate", "squeeze", "swell", "preempt")):
        v[L_ALLOW_PLACE + i] = kind in allow
    return v


class _BundleType(types.StructRef):
    """A numba struct of named fields (arrays and scalars), passed to compiled code as one argument."""

    def preprocess_fields(self, fields: Any) -> tuple:
        return tuple((name, types.unliteral(t)) for name, t in fields)


@structref.register
class _TablesType(_BundleType):
    pass


@structref.register
class _StateType(_BundleType):
    pass


@structref.register
class _OutType(_BundleType):
    pass


TABLE_FIELDS = (
    "layout", "submit", "iterations", "req_gpus", "deadline", "job_model", "fits_type", "type_total", "type_mem",
    "gpu_type", "share_units", "share_half_step", "round_s", "static_pending", "static_running", "solo_iter",
    "log_held", "footprints", "xi_tab", "inv_types", "inv_horizon", "inv_type_total", "type_frac",
)
STATE_FIELDS = (
    "remaining", "n_preempt", "rate", "last_t", "active_from", "held", "held_shared", "share_lo", "share_hi",
    "solo_rate", "job_min_mem", "footprint", "accum", "busy_t", "shared_t", "slot_job", "job_type", "job_nodes",
)
OUT_FIELDS = ("buf", "mask", "placeable")


class Tables(structref.StructRefProxy):
    """What the kernel reads that stays fixed through an episode (fields :data:`TABLE_FIELDS`): the ``layout``
    vector, per-job constants of the engine, the cluster's GPU types, the share grid (``share_units`` steps in a
    GPU, ``share_half_step`` half a step as a fraction of a GPU), the round length (0 without rounds) and the
    observation's static rows and lookup tables (:class:`~gpucluster_env.env.observation.ObservationBuilder`)."""


class State(structref.StructRefProxy):
    """The engine's arrays the kernel reads as they are at each call (fields :data:`STATE_FIELDS`), and the
    environment's records of each job's GPU type and node count."""


class Out(structref.StructRefProxy):
    """What the kernel writes: the flat observation buffer, the action mask and, per pending window slot,
    whether some free-GPU placement is valid."""


structref.define_proxy(Tables, _TablesType, TABLE_FIELDS)
structref.define_proxy(State, _StateType, STATE_FIELDS)
structref.define_proxy(Out, _OutType, OUT_FIELDS)


@numba.njit(cache=True)
def _new_tables(layout, submit, iterations, req_gpus, deadline, job_model, fits_type, type_total, type_mem,
                gpu_type, share_units, share_half_step, round_s, static_pending, static_running, solo_iter, log_held,
                footprints, xi_tab, inv_types, inv_horizon, inv_type_total, type_frac):  # pragma: no cover
    return Tables(layout, submit, iterations, req_gpus, deadline, job_model, fits_type, type_total, type_mem,
                  gpu_type, share_units, share_half_step, round_s, static_pending, static_running, solo_iter,
                  log_held, footprints, xi_tab, inv_types, inv_horizon, inv_type_total, type_frac)


@numba.njit(cache=True)
def _new_state(remaining, n_preempt, rate, last_t, active_from, held, held_shared, share_lo, share_hi, solo_rate,
               job_min_mem, footprint, accum, busy_t, shared_t, slot_job, job_type, job_nodes):  # pragma: no cover
    return State(remaining, n_preempt, rate, last_t, active_from, held, held_shared, share_lo, share_hi, solo_rate,
                 job_min_mem, footprint, accum, busy_t, shared_t, slot_job, job_type, job_nodes)


@numba.njit(cache=True)
def _new_out(buf, mask, placeable):  # pragma: no cover
    return Out(buf, mask, placeable)


def kernel_inputs(eng: ClusterEngine, ob: ObservationBuilder, layout: ActionLayout, allow: frozenset[str],
                  footprints: np.ndarray, xi_tab: np.ndarray, buf: np.ndarray, mask: np.ndarray, placeable: np.ndarray
                  ) -> tuple[Tables, State, Out]:
    """The kernel's three bundles for engine ``eng`` (its current state: an engine's reset makes new arrays),
    observation builder ``ob``, action layout ``layout`` with the action kinds ``allow``, the jobs' memory
    ``footprints`` (:meth:`~gpucluster_env.env.codec.ActionCodec.footprints`), the predicted slowdown table and
    the output arrays. The :class:`State` holds the engine's own arrays, not copies, so each call reads
    them as actions and the clock have left them; the fixed ones are given one memory layout (C-ordered,
    writable), so one compiled signature serves every scenario."""

    def fixed(a: np.ndarray) -> np.ndarray:
        return np.require(a, requirements=("C", "W"))

    tables = _new_tables(
        layout_vector(layout, allow), fixed(eng.submit), fixed(eng.iterations), fixed(eng.req_gpus),
        fixed(eng.deadline), fixed(eng.job_model), fixed(eng.fits_type), fixed(eng.type_total), fixed(eng.type_mem),
        fixed(eng.gpu_type), eng.share_units, 0.5 * eng.share_step, float(eng.config.round_s or 0.0), ob.static_pending,
        ob.static_running, ob.solo_iter, ob.log_held, footprints, xi_tab, ob.inv_types, ob.inv_horizon,
        ob.inv_type_total, ob.type_frac)
    state = _new_state(
        eng.remaining, eng.n_preempt, eng.rate, eng.last_t, eng.active_from, eng.held, eng.held_shared, eng.share_lo,
        eng.share_hi, eng.solo_rate, eng.job_min_mem, eng.footprint, eng.accum, eng.busy_t, eng.shared_t,
        eng.slot_job, ob.job_type, ob.job_nodes)
    return tables, state, _new_out(buf, mask, placeable)
