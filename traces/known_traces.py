"""The traces the project knows by name (:data:`TRACES`): each one's files, where they come from upstream
(URL and pinned sha256), its loader, its synthetic stand-in, its citation and licence, and the package's own
copy where the licence lets it ship one. Looked up and located by :mod:`.registry`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RemoteFile:
    """One file of a trace: its path under a data root, its public URL, and its sha256 when pinned (None: the
    upstream file could not be checked from here; ``fetch`` then prints the hash it got)."""

    relpath: str
    url: str
    sha256: str | None = None
    unpack: str | None = None  # member to extract when the URL is a .tar.gz archive


@dataclass(frozen=True)
class TraceSpec:
    """A named trace: its files, its loader, the synthetic generator standing in for it, and its citation."""

    name: str
    description: str
    files: tuple[RemoteFile, ...]
    loader: str
    synthetic: str
    citation: str
    license: str
    shipped: str | None = None
    """The file name of the package's own gzip copy of the (single, pinned) file under ``traces/embedded/``,
    used when no data root has the file, so the trace runs on a fresh machine; None: not shipped."""

    @property
    def primary(self) -> str:
        return self.files[0].relpath


_PHILLY_CSV_SHA = "ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da"
_OPENB_SHA = "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"
_VENUS_2VC_SHA = "15c4738f1e1da88bafc66fdb823f9455db18d89276aeb0dea2f70ab93ceae117"
"""The slice as published at mini-compute-simulator commit ce41673 (checked equal to ../shared/data's copy)."""
_VENUS_JOBS_SHA = "dd044eace2854471dbb87b59d31efd7bba652cb782c039b5166e8a3ef2aaeae2"
_PAI_SAMPLE_SHA = "9ebd06e82c8cc13ef5049e0054b53c79794e03aff625bb3978620b05e2feaa76"
_PAI_COMPLETED_SHA = "7259aec53d5de3b6236ab05868a207ebb09394ac4ca7cab153ae0e8ee0238659"

TRACES: dict[str, TraceSpec] = {
    t.name: t
    for t in (
        TraceSpec(
            "philly",
            "Microsoft Philly, Sep-Dec 2017: 82,247 GPU jobs (Pollux's preprocessing of cluster_job_log)",
            (
                RemoteFile(
                    "traces/philly/philly_jobs.csv",
                    "https://raw.githubusercontent.com/petuum/adaptdl/osdi21-artifact/simulator/traces/"
                    "philly_jobs.csv",
                    _PHILLY_CSV_SHA,
                ),
            ),
            "philly-csv",
            "philly",
            "Jeon et al., ATC'19; Qiao et al. (Pollux), OSDI'21",
            "CC-BY-4.0",
            shipped="philly_jobs.csv.gz",
        ),
        TraceSpec(
            "philly-joblog",
            "Microsoft Philly official cluster_job_log (JSON; jobs with their attempts, VC, user, status)",
            (
                RemoteFile(
                    "traces/philly/cluster_job_log",
                    "https://github.com/msr-fiddle/philly-traces/raw/master/trace-data.tar.gz",
                    None,
                    unpack="trace-data/cluster_job_log",
                ),
            ),
            "philly-json",
            "philly",
            "Jeon et al., ATC'19 (msr-fiddle/philly-traces)",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "philly-gavel",
            "Gavel's per-VC Philly-derived .trace files (job types, steps, arrivals)",
            (
                RemoteFile(
                    "traces/philly/gavel_msr_seed0",
                    "https://github.com/stanford-futuredata/gavel/tree/master/scheduler/traces/msr/seed=0",
                ),
            ),
            "gavel-dir",
            "philly",
            "Narayanan et al. (Gavel), OSDI'20",
            "MIT",
        ),
        TraceSpec(
            "venus",
            "SenseTime Helios 'Venus' cluster, Apr-Sep 2020: per-job cluster_log.csv",
            (
                RemoteFile(
                    "traces/venus/cluster_log.csv",
                    "https://github.com/S-Lab-System-Group/HeliosData/raw/main/data/Venus/cluster_log.csv",
                ),
            ),
            "helios",
            "venus",
            "Hu et al. (Helios), SC'21",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "venus-jobs",
            "SenseTime Helios 'Venus', 2020-03-18..09-28: all 125,303 GPU jobs (arrival, GPUs, run time capped "
            "at 48 h)",
            (
                RemoteFile(
                    "traces/venus/helios_venus_gpu_jobs.csv",
                    "https://raw.githubusercontent.com/mystous/gpu_scheduler/01818af/sim/helios_trace.csv",
                    _VENUS_JOBS_SHA,
                ),
            ),
            "helios-jobs",
            "venus",
            "Hu et al. (Helios), SC'21; HeliosData; projected and re-published by mystous/gpu_scheduler",
            "CC-BY-4.0",
            shipped="helios_venus_gpu_jobs.csv.gz",
        ),
        TraceSpec(
            "venus-2vc",
            "SenseTime Helios 'Venus', two VCs (vcvGl, vcvlY), 2020-09-01..26: 1,867 real per-job rows",
            (
                RemoteFile(
                    "traces/venus/helios_venus_2vc_sept.csv",
                    "https://raw.githubusercontent.com/felivalencia3/mini-compute-simulator/"
                    "ce41673615cb5430db4ef19a74bff2bbcfd1de75/tests/validation_traces/helios_venus_2vc_sept.csv",
                    _VENUS_2VC_SHA,
                ),
            ),
            "helios-slice",
            "venus",
            "Hu et al. (Helios), SC'21; slice re-published by felivalencia3/mini-compute-simulator (Apache-2.0)",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "alibaba",
            "Alibaba PAI 2020 (cluster-trace-gpu-v2020): pai_job_table + pai_task_table",
            (
                RemoteFile(
                    "traces/alibaba/pai_v2020/pai_job_table.csv",
                    "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_job_table.tar.gz",
                    None,
                    unpack="pai_job_table.csv",
                ),
                RemoteFile(
                    "traces/alibaba/pai_v2020/pai_task_table.csv",
                    "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_task_table.tar.gz",
                    None,
                    unpack="pai_task_table.csv",
                ),
            ),
            "pai",
            "alibaba",
            "Weng et al. (MLaaS in the Wild), NSDI'22",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "alibaba-pai-sample",
            "Alibaba PAI 2020: 6,000 consecutive GPU jobs of the official simulator sample (21.2 h of arrivals; "
            "fractional GPUs, GPU type per job)",
            (
                RemoteFile(
                    "traces/alibaba/pai_v2020/pai_gpu_jobs_sample_6000.csv",
                    "https://raw.githubusercontent.com/Xnhyacinth/OPERATE/bcec276/sources/alibaba/"
                    "alibaba_trace_gpu_simulator_jobs_6000.csv",
                    _PAI_SAMPLE_SHA,
                ),
            ),
            "pai-jobs",
            "alibaba",
            "Weng et al. (MLaaS in the Wild), NSDI'22; window cut by Xnhyacinth/OPERATE",
            "CC-BY-4.0",
            shipped="pai_gpu_jobs_sample_6000.csv.gz",
        ),
        TraceSpec(
            "alibaba-gpu",
            "Alibaba GPU-sharing cluster 2023 (openb): 8,152 pods, fractional GPUs, GPU-type specs",
            (
                RemoteFile(
                    "traces/alibaba/gpu_v2023/openb_pod_list_default.csv",
                    "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-gpu-v2023/"
                    "csv/openb_pod_list_default.csv",
                    _OPENB_SHA,
                ),
            ),
            "openb",
            "alibaba",
            "Weng et al. (Beware of Fragmentation), ATC'23",
            "CC-BY-4.0",
            shipped="openb_pod_list_default.csv.gz",
        ),
    )
}
