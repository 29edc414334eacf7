"""The claims board's held-out seeds, declared once for the investigation scripts of ``docs/_scripts``.

``leaderboard/boards/claims.toml`` runs its cells on seeds ``first_seed`` .. ``first_seed + seeds - 1`` (100-179), and
docs/results/claims.md checks its verdicts on a second, disjoint set of the same size from seed 200 (200-279). No
setting, model or experiment is developed on these seeds: a script reads them only to replicate, unchanged, what
it measured on development seeds (``--replicate``), and refuses them otherwise.
"""

from __future__ import annotations

import argparse

from gpucluster_env.leaderboard.board import load_board

SECOND_FIRST_SEED = 200
"""The first seed of the claims board's second seed set (``gpucluster leaderboard run claims --first-seed 200``)."""


def held_out_seeds() -> set[int]:
    """Both of the claims board's seed sets, read from the shipped board."""
    first = {c.seed for c in load_board("claims").cells}
    n = len(first)
    return first | set(range(SECOND_FIRST_SEED, SECOND_FIRST_SEED + n))


HELD_OUT = held_out_seeds()
HELD_OUT_TEXT = "100-179, 200-279"
"""How the refusals name :data:`HELD_OUT` (checked against it by ``tests/docs/test_held_out.py``)."""
REPLICATED_SETS = ("100-139", "200-239")
"""The first 40 seeds of each set: the held-out seeds the cause scripts' ``--replicate`` runs were made on."""


def parse_seeds(text: str) -> list[int]:
    """Seeds as the scripts' ``--seeds`` take them: ``0-4``, ``0,3,5`` or both (``0-4,7``)."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds += list(range(int(lo), int(hi or lo) + 1))
    return seeds


def add_replicate_options(ap: argparse.ArgumentParser, what: str) -> None:
    """A cause script's ``--replicate`` (``what``, run unchanged on :data:`REPLICATED_SETS`) and ``--held-out``
    (one of those sets only)."""
    ap.add_argument("--replicate", action="store_true", help=f"{what} on the held-out seeds 100-139 and 200-239")
    ap.add_argument("--held-out", choices=REPLICATED_SETS, default=None, help="with --replicate: one set only")


def seed_sets(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The seed sets a run reads: the replicated held-out sets with ``--replicate``, else ``--seeds``, which must
    hold no held-out seed (a one-line argparse error, exit 2)."""
    if args.held_out and not args.replicate:
        ap.error("--held-out goes with --replicate")
    if args.replicate:
        return [args.held_out] if args.held_out else list(REPLICATED_SETS)
    if HELD_OUT & set(parse_seeds(args.seeds)):
        ap.error(f"held-out seeds ({HELD_OUT_TEXT}) are read only with --replicate")
    return [args.seeds]
