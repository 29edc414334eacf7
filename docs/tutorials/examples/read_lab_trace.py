"""Check how a trace of your own is read before running it: ``lab_jobs.csv`` (its own column names, arrivals in
minutes, run times in hours) through the column map that ``gpucluster run --columns`` takes.

Run: ``python read_lab_trace.py``; then the same file and map on a cluster of your own:

    gpucluster run --trace lab_jobs.csv --cluster V100:1x8,T4:2x4 --policy sjf \\
        --columns job_id=id,submit_s=arrival_min:min,num_gpus=gpus,duration_s=runtime_h:h,model=arch
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from gpucluster_env.traces.registry import load_file

TRACE = Path(__file__).resolve().parent / "lab_jobs.csv"
COLUMNS = "job_id=id,submit_s=arrival_min:min,num_gpus=gpus,duration_s=runtime_h:h,model=arch"
"""FIELD=COLUMN[:UNIT]: which column holds each field of the normalized table, and the unit of the times."""


def read_jobs(path: Path = TRACE, columns: str = COLUMNS) -> pd.DataFrame:
    """The jobs of ``path`` as the engine will take them (times in seconds), every row checked: a bad row is a
    one-line error naming the file, the row and the field."""
    jobs, report = load_file(path, columns=columns)
    print(f"{report.source}: {report.rows_read} rows read, {len(jobs)} jobs")
    return jobs


if __name__ == "__main__":
    print(read_jobs()[["job_id", "submit_s", "num_gpus", "duration_s", "model"]].to_string(index=False))
