"""A 3 x 5 pixel font drawn with numpy: labels and numbers on the ``rgb_array`` frames (no imaging library).

Digits, the letters (lower case drawn as upper case) and a little punctuation; any other character is drawn as
``?``. :func:`draw_text` writes a string into an image at an integer scale; :func:`text_width` says how wide it
will be, so a caller can fit or clip it.
"""

from __future__ import annotations

import numpy as np

GLYPH_W, GLYPH_H = 3, 5
_ROWS = {
    "0": "111 101 101 101 111", "1": "010 110 010 010 111", "2": "111 001 111 100 111",
    "3": "111 001 111 001 111", "4": "101 101 111 001 001", "5": "111 100 111 001 111",
    "6": "111 100 111 101 111", "7": "111 001 001 010 010", "8": "111 101 111 101 111",
    "9": "111 101 111 001 111", "A": "010 101 111 101 101", "B": "110 101 110 101 110",
    "C": "011 100 100 100 011", "D": "110 101 101 101 110", "E": "111 100 110 100 111",
    "F": "111 100 110 100 100", "G": "011 100 101 101 011", "H": "101 101 111 101 101",
    "I": "111 010 010 010 111", "J": "001 001 001 101 010", "K": "101 101 110 101 101",
    "L": "100 100 100 100 111", "M": "101 111 111 101 101", "N": "110 101 101 101 101",
    "O": "010 101 101 101 010", "P": "110 101 110 100 100", "Q": "010 101 101 110 011",
    "R": "110 101 110 101 101", "S": "011 100 010 001 110", "T": "111 010 010 010 010",
    "U": "101 101 101 101 111", "V": "101 101 101 101 010", "W": "101 101 111 111 101",
    "X": "101 101 010 101 101", "Y": "101 101 010 010 010", "Z": "111 001 010 100 111",
    " ": "000 000 000 000 000", ".": "000 000 000 000 010", ",": "000 000 000 010 100",
    ":": "000 010 000 010 000", "/": "001 001 010 100 100", "-": "000 000 111 000 000",
    "+": "000 010 111 010 000", "=": "000 111 000 111 000", "%": "101 001 010 100 101",
    "(": "010 100 100 100 010", ")": "010 001 001 001 010", "_": "000 000 000 000 111",
    "?": "111 001 010 000 010", "#": "101 111 101 111 101",
}
GLYPHS: dict[str, np.ndarray] = {
    ch: np.array([[c == "1" for c in row] for row in rows.split()], dtype=bool) for ch, rows in _ROWS.items()
}
"""Each character's 5 x 3 pixel mask."""


def text_width(text: str, scale: int = 1) -> int:
    """Pixels ``text`` takes at ``scale`` (one blank column between characters)."""
    return max(0, len(text) * (GLYPH_W + 1) * scale - scale)


def draw_text(img: np.ndarray, text: str, x: int, y: int, color: tuple[int, int, int], scale: int = 1) -> None:
    """Draw ``text`` into ``img`` (``(H, W, 3)`` uint8) with its top-left corner at ``(x, y)``; what falls
    outside the image is clipped."""
    h, w = img.shape[:2]
    rgb = np.asarray(color, dtype=np.uint8)
    for i, ch in enumerate(text):
        glyph = GLYPHS.get(ch.upper(), GLYPHS["?"])
        if scale > 1:
            glyph = glyph.repeat(scale, axis=0).repeat(scale, axis=1)
        gx = x + i * (GLYPH_W + 1) * scale
        if gx >= w:
            break
        x0, y0 = max(gx, 0), max(y, 0)
        x1, y1 = min(gx + glyph.shape[1], w), min(y + glyph.shape[0], h)
        if x1 <= x0 or y1 <= y0:
            continue
        sub = glyph[y0 - y:y1 - y, x0 - gx:x1 - gx]
        img[y0:y1, x0:x1][sub] = rgb
