"""The fitted :class:`~.synthetic.TraceProfile` of each synthetic generator, with where its numbers come from.

- ``PHILLY``: :func:`~.synthetic.fit_profile` on ``traces/philly/philly_jobs.csv`` (82,247 jobs; Jeon et al.,
  ATC'19, Pollux preprocessing). Hour of day is the trace's own clock.
- ``ALIBABA``: :func:`~.synthetic.fit_profile` on ``traces/alibaba/gpu_v2023/openb_pod_list_default.csv``
  (7,255 scheduled pods less 1,052 CPU-only = 6,203 GPU pods; Weng et al., ATC'23); hour of day counts from
  the
  trace start.
- ``VENUS``: from published aggregates only (the per-job log is not public here), Hu et al. SC'21:
  ``helios_cluster_summary.csv`` row Venus: 125,303 GPU jobs, median GPUs 1, mean GPUs 6.736, median run time
  204 s, mean 13,040.6 s, GPU-job complete/cancel/fail 0.526/0.272/0.202; ``venus_cluster_gpu_number.csv``:
  181 days, VC weights = each VC's mean GPU count over the days. GPU counts: P(1) = 0.6 and powers of two
  2..128 with geometric weights (ratio 0.6954) so the mean is 6.736; durations log-normal with median 204 s
  and
  sigma = sqrt(2 ln(mean / median)) = 2.88, tabulated at the quantile grid (top quantile p = 0.9999); a flat
  hourly profile (no published diurnal data).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from gpucluster_env.traces.synthetic import QUANTILE_PROBS, TraceProfile

PHILLY = TraceProfile(
    name="philly",
    gpu_values=(1, 2, 4, 8, 12, 16, 24, 32, 64, 128),
    gpu_probs=(0.931669, 0.022104, 0.022736, 0.019976, 8.5e-05, 0.00242, 8.5e-05, 0.000815, 7.3e-05, 3.6e-05),
    log10_dur_single=(
        0.0,
        1.4771,
        1.716,
        1.7924,
        1.8808,
        2.3324,
        2.7782,
        3.0481,
        3.2375,
        3.3917,
        3.5745,
        3.93,
        4.2819,
        5.1316,
        5.9374,
        6.5127,
    ),
    log10_dur_multi=(
        0.0,
        0.8451,
        1.1139,
        1.2304,
        1.3979,
        2.0414,
        2.7316,
        3.6611,
        4.2638,
        4.7363,
        5.0535,
        5.3189,
        5.5614,
        5.9561,
        6.3942,
        6.6654,
    ),
    rate_per_hour=31.4698,
    hourly_profile=(
        1.2743,
        0.9845,
        1.1191,
        1.103,
        0.7003,
        1.1526,
        1.6726,
        2.089,
        1.1094,
        1.0058,
        1.0242,
        0.8693,
        0.7491,
        0.7047,
        0.6376,
        0.649,
        0.8815,
        0.6679,
        0.8007,
        0.7283,
        1.0164,
        0.9168,
        1.1337,
        1.0099,
    ),
    vc_names=(
        "6214e9",
        "11cb48",
        "6c71a0",
        "b436b2",
        "103959",
        "ee9e8c",
        "0e4a51",
        "ed69ec",
        "7f04ca",
        "2869ce",
        "e13805",
        "23dbec",
        "51b7ef",
        "795a4c",
        "925e2b",
    ),
    vc_probs=(
        0.501246,
        0.195642,
        0.121014,
        0.090253,
        0.023515,
        0.018371,
        0.017447,
        0.013824,
        0.008791,
        0.005131,
        0.004547,
        9.7e-05,
        4.9e-05,
        3.6e-05,
        3.6e-05,
    ),
    source="fitted to traces/philly/philly_jobs.csv",
)

ALIBABA = TraceProfile(
    name="alibaba",
    gpu_values=(1, 2, 4, 8),
    gpu_probs=(0.98807, 0.002418, 0.002418, 0.007093),
    log10_dur_single=(
        0.6021,
        1.301,
        1.6812,
        1.8261,
        2.1584,
        2.3385,
        2.5647,
        2.8162,
        3.0155,
        3.2269,
        3.5126,
        3.8593,
        4.206,
        5.1323,
        6.9441,
        7.0982,
    ),
    log10_dur_multi=(
        1.3424,
        1.3565,
        1.5563,
        1.6505,
        2.1461,
        2.4126,
        2.6967,
        2.8134,
        3.2242,
        3.557,
        4.1971,
        4.8272,
        5.2709,
        6.0264,
        6.1148,
        6.1246,
    ),
    rate_per_hour=1.7308,
    hourly_profile=(
        1.3813,
        1.2961,
        0.9789,
        1.331,
        1.2884,
        1.0021,
        0.8976,
        0.9092,
        0.7235,
        0.4449,
        0.7506,
        0.6848,
        0.5107,
        0.472,
        0.4411,
        0.6113,
        0.9131,
        1.242,
        1.625,
        1.4084,
        1.0717,
        1.2768,
        1.1917,
        1.5476,
    ),
    status_names=("Failed", "Running", "Succeeded"),
    status_probs=(0.301306, 0.66887, 0.029824),
    milli_values=(
        1000,
        810,
        470,
        320,
        650,
        460,
        230,
        550,
        160,
        590,
        220,
        370,
        480,
        110,
        50,
        330,
        350,
        270,
        440,
        140,
    ),
    milli_probs=(
        0.580287,
        0.16596,
        0.074249,
        0.046997,
        0.035574,
        0.020888,
        0.015339,
        0.011586,
        0.011423,
        0.010117,
        0.009791,
        0.007507,
        0.003101,
        0.002937,
        0.001142,
        0.001142,
        0.000816,
        0.000653,
        0.000326,
        0.000163,
    ),
    source="fitted to traces/alibaba/gpu_v2023/openb_pod_list_default.csv",
)

VENUS_MEDIAN_RUN_S = 204.0
VENUS_MEAN_RUN_S = 13040.598
VENUS_MEAN_GPUS = 6.736
VENUS_GPU_JOBS = 125303
VENUS_DAYS = 181


def _venus_log10_quantiles() -> tuple[float, ...]:
    sigma = math.sqrt(2.0 * math.log(VENUS_MEAN_RUN_S / VENUS_MEDIAN_RUN_S))
    nd = NormalDist(math.log(VENUS_MEDIAN_RUN_S), sigma)
    out = []
    for p in QUANTILE_PROBS:
        q = min(max(p, 1e-4), 1 - 1e-4)
        out.append(round(max(0.0, nd.inv_cdf(q) / math.log(10)), 4))
    return tuple(out)


_VENUS_P1, _VENUS_RATIO = 0.6, 0.6954242801
_w = [_VENUS_RATIO**k for k in range(7)]
_VENUS_GPU_PROBS = (_VENUS_P1,) + tuple(round((1 - _VENUS_P1) * x / sum(_w), 6) for x in _w)

VENUS = TraceProfile(
    name="venus",
    gpu_values=(1, 2, 4, 8, 16, 32, 64, 128),
    gpu_probs=_VENUS_GPU_PROBS,
    log10_dur_single=_venus_log10_quantiles(),
    log10_dur_multi=_venus_log10_quantiles(),
    rate_per_hour=round(VENUS_GPU_JOBS / (VENUS_DAYS * 24), 4),
    hourly_profile=(1.0,) * 24,
    vc_names=(
        "vcvGl",
        "vcefl",
        "vcEwI",
        "vchbv",
        "vcHvQ",
        "vcLTP",
        "vcWoR",
        "vcJsw",
        "vcvlY",
        "vcsBT",
        "vc8Gr",
        "vcKeu",
        "vcYVn",
        "vcKrE",
        "vcOhe",
        "vcP2J",
        "vchA3",
        "vccJW",
        "vcJLV",
        "vcJkd",
        "vcgkz",
        "vcbIW",
        "vc6YE",
        "vcEhP",
    ),
    vc_probs=(
        0.1495,
        0.0782,
        0.0704,
        0.0628,
        0.0626,
        0.0626,
        0.0593,
        0.0553,
        0.0525,
        0.0505,
        0.0469,
        0.0433,
        0.0373,
        0.0313,
        0.0293,
        0.0252,
        0.0187,
        0.0168,
        0.0135,
        0.0123,
        0.0078,
        0.0069,
        0.0068,
        0.0003,
    ),
    status_names=("COMPLETED", "CANCELLED", "FAILED"),
    status_probs=(0.526, 0.272, 0.202),
    source="fitted to the Helios published aggregates (helios_cluster_summary.csv, "
    "venus_cluster_gpu_number.csv)",
)

PROFILES: dict[str, TraceProfile] = {"philly": PHILLY, "venus": VENUS, "alibaba": ALIBABA}


def get_profile(name: str) -> TraceProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown synthetic generator {name!r}; known: {', '.join(PROFILES)}") from None
