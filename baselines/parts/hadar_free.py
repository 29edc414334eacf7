"""The free GPUs FIND_ALLOC reads (:mod:`.hadar_find`), kept by class so that its options cost less than a walk
over the servers.

Servers with the same free GPUs of every type form a class (on PhillyScale's 552 one-type servers at most nine:
0 to 8 free GPUs). A class keeps its free vector, its number of members and its members as a bit set in server
order, so FIND_ALLOC's orders (servers by free or usable GPUs, most first, ties by index) are walked level by
level over the classes of a level, the servers of a level by their bits in index order, and the consolidated
server is picked among the classes (the lowest index of a class is its first bit). Taking GPUs moves each
server concerned to the class of its new vector (:func:`take_rows`); giving them back (``sign=-1``) moves it back,
which is how the DP window tries a job and undoes it. Which class number a vector gets may differ after such
moves; nothing read from a class depends on its number.

``fs`` ("free sets") is a tuple ``(fr, cls, vec, cnt, bits, nc)``: the servers x types free GPUs, each
server's class, each class's free vector, its member count, its members as 64-bit words of bits (server ``h``
is bit ``h % 64`` of word ``h // 64``), and the number of class slots in use (a 1-element array). A class left
empty keeps its slot until a vector not seen before needs one, so at most one slot a server is ever used.
"""

from __future__ import annotations

import numba
import numpy as np

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}

_DEBRUIJN = 0x03F79D71B4CB0A89
_LOW = np.zeros(64, dtype=np.int64)  # the bit a de Bruijn product's top six bits name
for _i in range(64):
    _LOW[(((1 << _i) * _DEBRUIJN) & 0xFFFFFFFFFFFFFFFF) >> 58] = _i


@numba.njit(**_JIT)
def low_bit(x: int) -> int:
    """The index of the lowest set bit of a non-zero 64-bit word (a de Bruijn multiplication; the product wraps
    and the shift is masked, so a word with its top bit set reads as the unsigned one would)."""
    return _LOW[(((x & -x) * _DEBRUIJN) >> 58) & 63]


@numba.njit(inline="always", **_JIT)
def _class_of(fs: tuple, h: int) -> int:
    """The class of server ``h``'s free vector: a slot holding that vector, else the first empty slot, else a
    new one (its vector set)."""
    fr, _, vec, cnt, _, nc = fs
    empty = -1
    for c in range(nc[0]):
        same = True
        for k in range(fr.shape[1]):
            if vec[c, k] != fr[h, k]:
                same = False
                break
        if same:
            return c
        if empty < 0 and cnt[c] == 0:
            empty = c
    if empty < 0:
        empty = nc[0]
        nc[0] += 1
    for k in range(fr.shape[1]):
        vec[empty, k] = fr[h, k]
    return empty


@numba.njit(inline="always", **_JIT)
def _join(fs: tuple, h: int) -> None:
    """Server ``h`` into the class of its free vector."""
    _, cls, _, cnt, bits, _ = fs
    c = _class_of(fs, h)
    cls[h] = c
    cnt[c] += 1
    bits[c, h >> 6] |= np.int64(1) << (h & 63)


@numba.njit(inline="always", **_JIT)
def _leave(fs: tuple, h: int) -> None:
    """Server ``h`` out of its class."""
    _, cls, _, cnt, bits, _ = fs
    c = cls[h]
    cnt[c] -= 1
    bits[c, h >> 6] &= ~(np.int64(1) << (h & 63))


@numba.njit(**_JIT)
def free_sets(fr: np.ndarray) -> tuple:
    """The classes of the free GPUs ``fr`` (servers x types, int64; kept in the tuple, not copied)."""
    n = fr.shape[0]
    fs = (fr, np.empty(n, dtype=np.int64), np.zeros((n + 1, fr.shape[1]), dtype=np.int64),
          np.zeros(n + 1, dtype=np.int64), np.zeros((n + 1, (n + 63) // 64), dtype=np.int64),
          np.zeros(1, dtype=np.int64))
    for h in range(n):
        _join(fs, h)
    return fs


@numba.njit(inline="always", **_JIT)
def take_rows(fs: tuple, used: np.ndarray, rows: np.ndarray, sign: int) -> None:
    """Take (``sign`` 1) or give back (-1) the ``(server, type, count)`` rows: the free GPUs, ``used`` (servers x
    types, floats of whole numbers) and the servers' classes follow."""
    fr = fs[0]
    for r in range(len(rows)):
        h, k, c = rows[r, 0], rows[r, 1], rows[r, 2] * sign
        _leave(fs, h)
        fr[h, k] -= c
        used[h, k] += c
        _join(fs, h)


@numba.njit(inline="always", **_JIT)
def level_bits(fs: tuple, key: np.ndarray, level: int, out: np.ndarray) -> None:
    """``out`` := the servers whose class has ``key[class] == level``, as words of bits (``key``: one value a
    class slot)."""
    _, _, _, cnt, bits, nc = fs
    out[:] = 0
    for c in range(nc[0]):
        if cnt[c] and key[c] == level:
            for w in range(bits.shape[1]):
                out[w] |= bits[c, w]


@numba.njit(inline="always", **_JIT)
def first_member(fs: tuple, c: int) -> int:
    """The lowest server index of class ``c`` (-1: empty)."""
    bits = fs[4]
    for w in range(bits.shape[1]):
        if bits[c, w]:
            return w * 64 + low_bit(bits[c, w])
    return -1


@numba.njit(inline="always", **_JIT)
def next_level(fs: tuple, key: np.ndarray, level: int) -> int:
    """The largest ``key`` of a non-empty class below ``level`` (0: none above 0)."""
    cnt, nc = fs[3], fs[5]
    below = 0
    for c in range(nc[0]):
        if cnt[c] and level > key[c] > below:
            below = key[c]
    return below
