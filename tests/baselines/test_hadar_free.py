"""Hadar's free GPUs kept by class (baselines/parts/hadar_free.py) and FIND_ALLOC's options read through them
(hadar_find.py consolidated, spread) give what the plain computations over every server give, on fresh classes
and on classes kept through random takes and give-backs (as the DP window and the greedy tail keep them), on
servers of one type and of several."""

from __future__ import annotations

import numpy as np
from gpucluster_env.baselines.parts.hadar_find import consolidated, spread
from gpucluster_env.baselines.parts.hadar_free import free_sets, low_bit, take_rows


def plain_consolidated(fr: np.ndarray, speed: np.ndarray, need: int) -> list[tuple[int, int, int]]:
    """The consolidated allocation spelt out over every server (hadar_alloc's FIND_ALLOC): the one server that
    fits whose gang's slowest GPU is fastest, then the least usable room, then the lowest index; else the
    servers by usable room, most first (ties by index); none when fewer than ``need`` usable GPUs are free."""
    ok = speed > 0
    kord = np.argsort(-speed, kind="stable").tolist()
    usable = (fr * ok[None, :]).sum(axis=1)

    def take_from(h: int, n: int, out: list[tuple[int, int, int]]) -> int:
        for k in kord:
            c = int(min(fr[h, k], n)) if ok[k] else 0
            if c:
                out.append((h, k, c))
                n -= c
        return n

    fits = []
    for h in range(len(fr)):
        if usable[h] >= need:
            cum = np.cumsum([fr[h, k] if ok[k] else 0 for k in kord])
            fits.append((-float(speed[kord[int(np.argmax(cum >= need))]]), int(usable[h]), h))
    out: list[tuple[int, int, int]] = []
    if fits:
        take_from(min(fits)[2], need, out)
        return out
    if usable.sum() < need:
        return []
    n = need
    for h in np.argsort(-usable, kind="stable").tolist():
        if n == 0:
            break
        n = take_from(h, n, out)
    return out


def plain_spread(fr: np.ndarray, speed: np.ndarray, need: int) -> list[tuple[int, int, int]]:
    """The non-consolidated allocation spelt out: each runnable type, fastest first, its servers by free GPUs
    (most first, ties by index), each giving what is still needed."""
    ok = speed > 0
    out: list[tuple[int, int, int]] = []
    n = need
    for k in np.argsort(-speed, kind="stable").tolist():
        for h in (np.argsort(-fr[:, k], kind="stable").tolist() if ok[k] and n else []):
            c = int(min(fr[h, k], n))
            if c:
                out.append((h, k, c))
                n -= c
    return out


def check_classes(fs: tuple) -> None:
    """Every server in exactly the class of its free vector, each class's count its members."""
    fr, cls, vec, cnt, bits, nc = fs
    for h in range(len(fr)):
        assert (vec[cls[h]] == fr[h]).all()
        member = [(int(bits[c, h >> 6]) >> (h & 63)) & 1 for c in range(nc[0])]
        assert sum(member) == 1 and member[cls[h]] == 1
    for c in range(nc[0]):
        assert cnt[c] == sum(bin(int(w) & (2**64 - 1)).count("1") for w in bits[c])


def options(fs: tuple, speed: np.ndarray, need: int) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """Both options read through the classes ``fs``."""
    ok = speed > 0
    kord = np.argsort(-speed, kind="stable").astype(np.int64)
    return ([tuple(r) for r in consolidated(fs, speed, ok, kord, need).tolist()],
            [tuple(r) for r in spread(fs, ok, kord, need).tolist()])


def test_low_bit() -> None:
    for i in range(64):
        word = np.array([1 << i], dtype=np.uint64).view(np.int64)[0]
        assert low_bit(word) == i
        assert low_bit(word | np.int64(-1) << np.int64(i)) == i  # and every higher bit set


def test_options_through_classes_give_the_plain_walks() -> None:
    rng = np.random.default_rng(11)
    for trial in range(400):
        servers = int(rng.integers(1, 150))  # past 64 and 128: several words of bits
        if trial % 2:  # one type a server, as every cluster spec builds them
            cap = np.zeros((servers, 3), dtype=np.int64)
            cap[np.arange(servers), rng.integers(0, 3, servers)] = rng.choice([2, 4, 8], servers)
        else:  # several types a server
            cap = rng.integers(0, 5, size=(servers, 3)) * (rng.random((1, 3)) < 0.8)
        fr = (cap * rng.random(cap.shape)).round().astype(np.int64)
        speed = rng.choice([0.0, 1.0, 2.0, 3.0], size=3)
        fs = free_sets(fr)
        check_classes(fs)
        for need in rng.integers(1, 20, size=4).tolist():
            assert options(fs, speed, need) == (plain_consolidated(fr, speed, need), plain_spread(fr, speed, need))


def test_classes_kept_through_takes_and_give_backs() -> None:
    # what the DP window does: take a job's GPUs going down, give them back coming up; the greedy tail only
    # takes. The kept classes must answer as classes built afresh on the same free GPUs.
    rng = np.random.default_rng(5)
    for trial in range(60):
        servers = int(rng.integers(1, 140))
        cap = rng.choice([0, 2, 8], size=(servers, 2)) if trial % 3 else np.full((servers, 1), 8)
        fr = cap.astype(np.int64).copy()
        used = np.zeros(cap.shape)
        fs = free_sets(fr)
        stack: list[np.ndarray] = []
        for _ in range(40):
            speed = rng.choice([1.0, 2.0], size=cap.shape[1])
            if stack and rng.random() < 0.35:
                take_rows(fs, used, stack.pop(), -1)
            else:
                need = int(rng.integers(1, 12))
                rows = np.array(options(fs, speed, need)[int(rng.integers(0, 2))], dtype=np.int64).reshape(-1, 3)
                if len(rows):
                    take_rows(fs, used, rows, 1)
                    stack.append(rows)
            check_classes(fs)
            assert (used == cap - fr).all()
            fresh = free_sets(fr.copy())
            for need in (1, 3, 9):
                assert options(fs, speed, need) == options(fresh, speed, need)
                assert options(fs, speed, need) == (plain_consolidated(fr, speed, need),
                                                    plain_spread(fr, speed, need))
