"""NumPy's PCG64 stream inside compiled code, with positions that can be skipped: the random numbers of Pollux's
genetic search (:mod:`.pollux_ga`), drawn where they are read.

The search has always drawn its random numbers as whole arrays (a double per entry of the population for each
of several mutation and repair steps) and read only some of them: a row's zeroing draws only in the tenth of
rows chosen for zeroing, an entry's raise only on nodes with free GPUs, a row's trimming keys only in rows over
their size. A :class:`Stream` here is the ``np.random.Generator``'s own PCG64 state (the 128-bit LCG state, the
buffered half of a 64-bit draw that ``integers`` uses) copied into a small array; :func:`next_double` and
:func:`bounded` step it exactly as NumPy does (``Generator.random``: the top 53 bits of a 64-bit output;
``Generator.integers`` below 2**32: Lemire's method on 32-bit halves), and positions nobody reads are skipped
with the LCG's jump-ahead (``x -> A^k x + C_k``, ``k`` split into powers of two whose multipliers are tabled), so
the generator ends where drawing every number would leave it and every number read is the same to the bit.
:func:`load` and :func:`store` copy the state in from and back to the generator.

A stream is ``uint64[5]``: state high and low words, positions still to skip, whether a 32-bit half is
buffered, that half. This module imports numba, so it is imported only when a Pollux search runs.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}
_MULT = 0x2360ED051FC65DA44385DF649FCCF645
"""PCG64's 128-bit LCG multiplier (NumPy's ``PCG_DEFAULT_MULTIPLIER_128``)."""
_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1
_TABLES: dict[int, np.ndarray] = {}

_U32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


def jump_table(inc: int) -> np.ndarray:
    """``(64, 4)`` words ``A_hi, A_lo, C_hi, C_lo`` of the LCG map ``2**i`` steps ahead for increment ``inc``
    (row 0: one step)."""
    table = _TABLES.get(inc)
    if table is None:
        table = np.empty((64, 4), dtype=np.uint64)
        a, c = _MULT, inc
        for i in range(64):
            table[i] = (a >> 64, a & _M64, c >> 64, c & _M64)
            c = ((a + 1) * c) & _M128
            a = (a * a) & _M128
        table = _TABLES[inc] = table
    return table


def load(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The stream and jump table of ``rng`` (a PCG64 generator; TypeError otherwise)."""
    if type(rng.bit_generator) is not np.random.PCG64:
        raise TypeError(f"pollux: the search needs a PCG64 generator, got {type(rng.bit_generator).__name__}")
    d = rng.bit_generator.state
    s = d["state"]["state"]
    return (np.array([s >> 64, s & _M64, 0, d["has_uint32"], d["uinteger"]], dtype=np.uint64),
            jump_table(d["state"]["inc"]))


def store(rng: np.random.Generator, stream: np.ndarray, table: np.ndarray) -> None:
    """Put the stream's position back into ``rng`` (skipped positions applied)."""
    settle(stream, table)
    d = rng.bit_generator.state
    d["state"]["state"] = (int(stream[0]) << 64) | int(stream[1])
    d["has_uint32"], d["uinteger"] = int(stream[3]), int(stream[4])
    rng.bit_generator.state = d


@intrinsic
def lcg(typingctx: Any, a_hi: Any, a_lo: Any, x_hi: Any, x_lo: Any, c_hi: Any, c_lo: Any) -> Any:
    """``(A x + C) mod 2**128`` on 64-bit words (high, low), in LLVM's native 128-bit integers."""
    word = types.uint64
    sig = types.UniTuple(word, 2)(word, word, word, word, word, word)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        wide = ir.IntType(128)

        def join(hi: Any, lo: Any) -> Any:
            return builder.or_(builder.shl(builder.zext(hi, wide), ir.Constant(wide, 64)), builder.zext(lo, wide))

        r = builder.add(builder.mul(join(args[0], args[1]), join(args[2], args[3])), join(args[4], args[5]))
        hi = builder.trunc(builder.lshr(r, ir.Constant(wide, 64)), ir.IntType(64))
        return context.make_tuple(builder, signature.return_type, (hi, builder.trunc(r, ir.IntType(64))))

    return sig, codegen


@numba.njit(**_JIT)
def _affine(stream: np.ndarray, table: np.ndarray, i: int) -> None:
    """The state ``x`` to ``A x + C`` mod 2**128 with row ``i`` of the jump table."""
    stream[0], stream[1] = lcg(table[i, 0], table[i, 1], stream[0], stream[1], table[i, 2], table[i, 3])


@numba.njit(**_JIT)
def settle(stream: np.ndarray, table: np.ndarray) -> None:
    """Apply the positions still to skip."""
    k = stream[2]
    i = 0
    while k != _ZERO:
        if k & _ONE:
            _affine(stream, table, i)
        k = k >> _ONE
        i += 1
    stream[2] = _ZERO


@numba.njit(**_JIT)
def skip(stream: np.ndarray, n: int) -> None:
    """Pass over ``n`` 64-bit draws (applied at the next draw)."""
    stream[2] += np.uint64(n)


@numba.njit(**_JIT)
def fork(stream: np.ndarray, offset: int) -> np.ndarray:
    """A stream of doubles starting ``offset`` draws after ``stream``'s position (``stream`` itself unmoved)."""
    out = stream.copy()
    out[2] += np.uint64(offset)
    out[3] = _ZERO
    return out


@numba.njit(**_JIT)
def next64(stream: np.ndarray, table: np.ndarray) -> np.uint64:
    """PCG64's next 64-bit output (XSL-RR of the stepped state)."""
    if stream[2] != _ZERO:
        settle(stream, table)
    _affine(stream, table, 0)
    hi = stream[0]
    x = hi ^ stream[1]
    rot = hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@numba.njit(**_JIT)
def near_table(table: np.ndarray, n: int) -> np.ndarray:
    """``(n, 4)`` words of the LCG map ``g`` steps ahead for ``g < n`` (row 0: the identity), for :func:`ahead`'s
    short jumps: one affine map each instead of one per bit of ``g``."""
    near = np.empty((n, 4), dtype=np.uint64)
    near[0, 0], near[0, 1], near[0, 2], near[0, 3] = _ZERO, _ONE, _ZERO, _ZERO
    for g in range(1, n):
        near[g, 0], near[g, 1] = lcg(table[0, 0], table[0, 1], near[g - 1, 0], near[g - 1, 1], _ZERO, _ZERO)
        near[g, 2], near[g, 3] = lcg(table[0, 0], table[0, 1], near[g - 1, 2], near[g - 1, 3], table[0, 2],
                                      table[0, 3])
    return near


@numba.njit(**_JIT)
def ahead(hi: np.uint64, lo: np.uint64, k: int, table: np.ndarray) -> tuple[np.uint64, np.uint64]:
    """The state ``(hi, lo)`` ``k >= 0`` steps ahead, kept in locals (the array stream's :func:`settle` and
    step), one map per bit of ``k``; a loop that draws many numbers makes its short jumps with
    :func:`near_table`'s rows and :func:`lcg` (a call here costs ten times that)."""
    i = 0
    while k:
        if k & 1:
            hi, lo = lcg(table[i, 0], table[i, 1], hi, lo, table[i, 2], table[i, 3])
        k >>= 1
        i += 1
    return hi, lo


@numba.njit(**_JIT)
def double_of(hi: np.uint64, lo: np.uint64) -> float:
    """The double :func:`next_double` returns when it has stepped the state to ``(hi, lo)``."""
    x = hi ^ lo
    rot = hi >> np.uint64(58)
    return np.float64(((x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))) >> np.uint64(11)) * (
        1.0 / 9007199254740992.0)


@numba.njit(**_JIT)
def next_double(stream: np.ndarray, table: np.ndarray) -> float:
    """``Generator.random()``'s next double in [0, 1)."""
    return np.float64(next64(stream, table) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(**_JIT)
def _next32(stream: np.ndarray, table: np.ndarray) -> np.uint64:
    """PCG64's next 32 bits: the buffered high half of the last 64-bit draw, else the low half of a new one."""
    if stream[3] != _ZERO:
        stream[3] = _ZERO
        return stream[4]
    v = next64(stream, table)
    stream[3] = _ONE
    stream[4] = v >> _S32
    return v & _U32


@numba.njit(**_JIT)
def bounded(stream: np.ndarray, table: np.ndarray, rng: int) -> int:
    """``Generator.integers(0, rng + 1)``'s next value for ``0 <= rng < 2**32 - 1`` (Lemire's rejection on
    32-bit draws; none drawn when ``rng`` is 0)."""
    if rng == 0:
        return 0
    excl = np.uint64(rng) + _ONE
    m = _next32(stream, table) * excl
    left = m & _U32
    if left < excl:
        threshold = (_U32 - np.uint64(rng)) % excl
        while left < threshold:
            m = _next32(stream, table) * excl
            left = m & _U32
    return np.int64(m >> _S32)
