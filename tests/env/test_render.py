"""The ``rgb_array`` frame is readable in a video: labelled nodes with their GPU types, job ids on the cells,
the clock in the header, sides in 16-pixel blocks, one size per cluster."""

from __future__ import annotations

import numpy as np

from gpucluster_env.engine import Place
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.env.pixelfont import GLYPHS, draw_text, text_width
from gpucluster_env.env.render import CELL, HEADER, TEXT_SCALE, frame_size


def _has_text(region: np.ndarray, text: str, x: int, y: int, scale: int) -> bool:
    """Whether ``region`` shows ``text`` drawn at ``(x, y)``: its ink pixels have one colour, and no other
    pixel of the text's box has it."""
    mask = np.zeros(region.shape, dtype=np.uint8)
    draw_text(mask, text, x, y, (255, 255, 255), scale)
    ink = mask[..., 0] > 0
    colours = {tuple(p) for p in region[ink]}
    box = np.zeros_like(ink)
    box[y:y + 5 * scale, x:x + text_width(text, scale)] = True
    rest = {tuple(p) for p in region[box & ~ink]}
    return bool(ink.any()) and len(colours) == 1 and not (colours & rest)


def test_frame_labels_nodes_types_jobs_and_clock() -> None:
    env = GPUClusterEnv("tiny", render_mode="rgb_array", observation="none")
    env.reset(seed=0)
    eng = env.engine
    first = env.render()
    h, w = frame_size(eng)
    assert first.shape == (h, w, 3) and first.dtype == np.uint8
    assert h % 16 == 0 and w % 16 == 0 and h >= HEADER + eng.num_nodes * CELL and w >= 200
    for node in range(eng.num_nodes):  # "N<i> <type>" left of each row
        label = f"N{node} {eng.type_names[int(eng.node_type[node])]}"
        y = HEADER + node * CELL + (CELL - 5 * TEXT_SCALE) // 2
        assert _has_text(first, label, 4, y, TEXT_SCALE), label
    assert _has_text(first, f"t {eng.now:,.0f} s  done 0/{eng.n_jobs}", 4, 3, TEXT_SCALE)
    job = int(eng.pending_jobs()[0])
    env.step(Place(job))
    g = int(np.flatnonzero((eng.slot_job == job).any(axis=1))[0])
    node = int(eng.gpu_node[g])
    k = g - int(eng.node_start[node])
    frame = env.render()
    x0 = max(text_width(f"N{n} {eng.type_names[int(eng.node_type[n])]}", TEXT_SCALE)
             for n in range(eng.num_nodes)) + 8
    y, x = HEADER + node * CELL, x0 + k * CELL
    cell = frame[y + 1:y + CELL - 1, x + 1:x + CELL - 1]
    tw = text_width(str(job), TEXT_SCALE)
    assert _has_text(cell, str(job), (CELL - 2 - tw) // 2, (CELL - 2 - 5 * TEXT_SCALE) // 2, TEXT_SCALE)
    env.step(0)  # wait: the clock moves, the frame keeps its size
    later = env.render()
    assert later.shape == first.shape and not np.array_equal(later[:HEADER // 2], first[:HEADER // 2])


def test_every_character_of_the_labels_has_a_glyph() -> None:
    from gpucluster_env.scenarios import SCENARIOS

    names = {n.gpu_type for sc in SCENARIOS.values() for n in sc.cluster.nodes}
    used = set("".join(names).upper()) | set("0123456789 ,/NTSDONERUWAIF")
    assert used <= set(GLYPHS), sorted(used - set(GLYPHS))
    assert all(g.shape == (5, 3) for g in GLYPHS.values())


def test_text_frames_fit_the_terminal_and_pipes_get_no_escapes(monkeypatch, capsys) -> None:  # noqa: ANN001
    import re

    from gpucluster_env.env import GPUClusterEnv

    monkeypatch.setenv("COLUMNS", "80")
    env = GPUClusterEnv("tiny", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert "\x1b[" in text and max(len(line) for line in plain.splitlines()) <= 80
    human = GPUClusterEnv("tiny", render_mode="human")
    human.reset(seed=0)
    capsys.readouterr()
    assert human.render() is None
    out = capsys.readouterr().out
    assert "gpucluster · tiny" in out and "\x1b[" not in out and max(len(line) for line in out.splitlines()) <= 80
