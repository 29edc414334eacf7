"""Episode records and terminal replays (harness layer; docs/replay.md).

* :mod:`.record`: the record format, reading (with line-exact errors; whole, or into the compact arrays of
  :mod:`.record_arrays` the viewer holds) and atomic writing.
* :mod:`.recorder`: :class:`RecordingWrapper`, which records the episodes of a ``GPUClusterEnv``.
* :mod:`.verify`: validation of a record by re-running its actions in a fresh environment.
* :mod:`.timeline`: the cluster at any instant, rebuilt from the record alone (:mod:`.cluster_state`).
* :mod:`.frame`, :mod:`.compare`, :mod:`.live`: frames drawn with ``rich`` and the interactive player.

Only :mod:`.record` is imported here; the rest load when used.
"""

from gpucluster_env.replay.record import Record, open_record, read_record, write_lines
from gpucluster_env.replay.record_schema import RECORD_FORMAT, RECORD_VERSION, RecordError

__all__ = ["RECORD_FORMAT", "RECORD_VERSION", "Record", "RecordError", "open_record", "read_record", "write_lines",
           "RecordingWrapper"]


def __getattr__(name: str) -> object:
    if name == "RecordingWrapper":
        from gpucluster_env.replay.recorder import RecordingWrapper

        return RecordingWrapper
    raise AttributeError(name)
