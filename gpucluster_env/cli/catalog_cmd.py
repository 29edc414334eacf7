"""``gpucluster catalog validate|fit-interference|fit-solo|fit-comm|list|gpus``: check the catalog against public
measurements, refit the interference table and Castor's XGBoost predictor, write Gavel's measured solo
throughputs (see :mod:`gpucluster_env.catalog`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpucluster_env.cli import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add the ``catalog`` command and its subcommands."""
    p = subparsers.add_parser("catalog", help="hardware/workload catalog: validate, fit interference")
    sub = p.add_subparsers(dest="catalog_command", metavar="SUBCOMMAND")
    v = sub.add_parser("validate",
                       help="compare the catalog with ../shared/data/profiles (or $GPUCLUSTER_DATA)")
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.set_defaults(func=validate_cmd)
    f = sub.add_parser("fit-interference",
                       help="refit the engine's xi table and Castor's XGBoost predictor from Gavel's and "
                            "Lucid's measured pairs")
    f.add_argument("--seeds", type=int, default=5, help="held-out splits for the evaluation (default 5)")
    f.add_argument("--out-dir", type=Path, default=None,
                   help="where to write xi_table.json and xi_predictor.json (default: the package data)")
    f.add_argument("--json", action="store_true", help="print one JSON object")
    f.set_defaults(func=fit_cmd)
    ls = sub.add_parser("list", help="models with speed and GPU demand on a GPU type; '*' marks estimated values")
    ls.add_argument("--gpu", default="V100", help="GPU type (default V100)")
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    ls.set_defaults(func=list_cmd)
    gp = sub.add_parser("gpus", help="the GPU types: specs, speed, where the numbers come from; '*' = estimated")
    gp.add_argument("--json", action="store_true", help="print one JSON object")
    gp.set_defaults(func=gpus_cmd)
    c = sub.add_parser("fit-comm",
                       help="refit the all-reduce latency constant (Castor eq. 2) on Pollux's multi-node runs")
    c.add_argument("--out-dir", type=Path, default=None,
                   help="where to write comm_fit.json (default: the package data)")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=fit_comm_cmd)
    so = sub.add_parser("fit-solo",
                        help="write Gavel's measured solo throughputs (the engine uses them where measured)")
    so.add_argument("--out-dir", type=Path, default=None,
                    help="where to write gavel_solo.json (default: the package data)")
    so.set_defaults(func=fit_solo_cmd)
    p.set_defaults(func=lambda args: _missing(p))


def list_cmd(args: argparse.Namespace) -> int:
    from gpucluster_env.catalog import default_catalog
    from gpucluster_env.catalog.demand import REFERENCE_TYPE
    from gpucluster_env.catalog.fit import GAVEL_JOB
    from gpucluster_env.catalog.lucid_pairs import LUCID_DEMAND, LUCID_TYPE

    cat = default_catalog()
    g = cat.gpu_type(args.gpu)
    rows = []
    for p in cat.models.values():
        rows.append({
            "model": p.name, "speed": round(cat.model_speed(p, args.gpu), 4),
            "speed_estimated": not cat.speed_measured(p, args.gpu) and args.gpu != REFERENCE_TYPE,
            "demand": round(cat.model_demand(p, args.gpu), 4),
            "demand_estimated": not ((p.name in GAVEL_JOB and args.gpu == REFERENCE_TYPE)
                                     or (p.name in LUCID_DEMAND and args.gpu == LUCID_TYPE)),
        })
    if args.json:
        print(json.dumps({"gpu": args.gpu, "gpu_speed_estimated": g.estimated, "models": rows}, sort_keys=True))
        return 0
    print(f"{args.gpu}: generic speed {g.speed:g}{'*' if g.estimated else ''} (V100 = 1); * = estimated")
    print(f"{'model':14} {'speed':>8} {'demand':>8}")
    for r in rows:
        print(f"{r['model']:14} {r['speed']:7.3f}{'*' if r['speed_estimated'] else ' '} "
              f"{r['demand']:7.3f}{'*' if r['demand_estimated'] else ' '}")
    return 0


def gpus_cmd(args: argparse.Namespace) -> int:
    """``gpucluster catalog gpus``: every GPU type of the catalog, from its declaration
    (:mod:`gpucluster_env.catalog.gpus`)."""
    from gpucluster_env.catalog import default_catalog

    rows = [{"name": g.name, "memory_gb": g.memory_gb, "fp32_tflops": g.fp32_tflops, "mem_bw_gbps": g.mem_bw_gbps,
             "pcie_gen": g.pcie_gen, "intra_node_bw_gbps": g.intra_node_bw_gbps, "speed": g.speed,
             "estimated": g.estimated, "measured_models": sorted(g.model_speed), "measured_pairs": len(g.xi_pairs),
             "xi_group": g.xi_group, "dual_issue_fp32": g.dual_issue_fp32, "source": g.source}
            for g in default_catalog().gpu_types.values()]
    if args.json:
        print(json.dumps({"gpu_types": rows}, sort_keys=True))
        return 0
    print(f"{'GPU':10} {'mem GB':>7} {'TFLOPS':>7} {'GB/s':>7} {'PCIe':>4} {'speed':>8} {'models':>6} "
          f"{'pairs':>5} {'group':6} source")
    for r in rows:
        print(f"{r['name']:10} {r['memory_gb']:7g} {r['fp32_tflops']:7g} {r['mem_bw_gbps']:7g} {r['pcie_gen']:4d} "
              f"{r['speed']:7.4f}{'*' if r['estimated'] else ' '} {len(r['measured_models']):6d} "
              f"{r['measured_pairs']:5d} {r['xi_group'] or '-':6} {r['source']}")
    print("speed: generic throughput relative to a V100, * = HadarE's estimate from specs; models: models with a "
          "measured speed on the type; pairs: pair slowdowns declared with the type; group: whose fitted pair "
          "offsets apply (docs/catalog.md)")
    return 0


def fit_comm_cmd(args: argparse.Namespace) -> int:
    from gpucluster_env.atomic_write import write_bytes_atomic
    from gpucluster_env.catalog.comm_fit import COMM_FIT_FILE, fit_all
    from gpucluster_env.catalog.models import MODELS, SINGLE_NODE_ALPHA_COMM

    out_dir = args.out_dir or Path(__file__).resolve().parents[1] / "data"
    out_dir.mkdir(parents=True, exist_ok=True)
    table = fit_all(dict(MODELS), SINGLE_NODE_ALPHA_COMM)
    write_bytes_atomic(out_dir / COMM_FIT_FILE, (json.dumps(table, indent=1, sort_keys=True) + "\n").encode())
    if args.json:
        print(json.dumps({"out_dir": str(out_dir), **table}, sort_keys=True))
    else:
        from gpucluster_env.cli.catalog_report import print_comm
        from gpucluster_env.text_tables import make_console

        print(f"wrote {out_dir / COMM_FIT_FILE}")
        print_comm(make_console(), table)  # the table `catalog validate` shows, fitted to the terminal
    return 0


def validate_cmd(args: argparse.Namespace) -> int:
    from gpucluster_env.catalog.validate import validate

    rep = validate()
    if args.json:
        print(json.dumps(rep, sort_keys=True))
    else:
        from gpucluster_env.cli.catalog_report import print_report

        print_report(rep)
    return 0


def fit_cmd(args: argparse.Namespace) -> int:
    from gpucluster_env.atomic_write import write_bytes_atomic
    from gpucluster_env.catalog.lucid_pairs import load_lucid
    from gpucluster_env.catalog.measured import load_gavel
    from gpucluster_env.catalog.predictor import PREDICTOR_FILE, fit_predictor
    from gpucluster_env.catalog.predictor_eval import evaluate, evaluate_by_model
    from gpucluster_env.catalog.xi_fit import build_xi_table
    from gpucluster_env.catalog.xi_model import XI_TABLE_FILE

    if args.seeds < 1:
        raise ValueError("--seeds must be at least 1")
    out_dir = args.out_dir or Path(__file__).resolve().parents[1] / "data"
    out_dir.mkdir(parents=True, exist_ok=True)
    gd = load_gavel()
    ld = load_lucid()
    table = build_xi_table(gd, ld=ld)
    write_bytes_atomic(out_dir / XI_TABLE_FILE, (json.dumps(table, indent=1, sort_keys=True) + "\n").encode())
    ev = evaluate(gd, seeds=tuple(range(args.seeds)), ld=ld)
    saved = fit_predictor(gd, ld=ld)
    saved["evaluation"] = ev
    saved["evaluation_by_model"] = evaluate_by_model(gd, ld=ld)
    write_bytes_atomic(out_dir / PREDICTOR_FILE, (json.dumps(saved) + "\n").encode())
    keys = ("rmse", "mape_median", "decision_agreement")
    summary = {g: {k: round(v[k], 4) for k in keys} for g, v in ev.items()}
    if args.json:
        print(json.dumps({"out_dir": str(out_dir), "evaluation": summary}, sort_keys=True))
    else:
        print(f"wrote {out_dir / XI_TABLE_FILE} and {out_dir / PREDICTOR_FILE}")
        for g, v in summary.items():
            print(f"{g:5} held-out RMSE {v['rmse']:.3f}  median APE {100 * v['mape_median']:.1f}%  "
                  f"decision agreement {100 * v['decision_agreement']:.1f}%")
    return 0


def fit_solo_cmd(args: argparse.Namespace) -> int:
    from gpucluster_env.atomic_write import write_bytes_atomic
    from gpucluster_env.catalog.solo import SOLO_FILE, build_solo_table

    out_dir = args.out_dir or Path(__file__).resolve().parents[1] / "data"
    out_dir.mkdir(parents=True, exist_ok=True)
    table = build_solo_table()
    write_bytes_atomic(out_dir / SOLO_FILE, (json.dumps(table, indent=1, sort_keys=True) + "\n").encode())
    n = sum(len(v) for layout in ("consolidated", "unconsolidated") for v in table[layout].values())
    print(f"wrote {out_dir / SOLO_FILE}: {n} measured configurations")
    return 0


def _missing(parser: argparse.ArgumentParser) -> int:
    """``gpucluster catalog`` without an action: a one-line error naming the actions."""
    from gpucluster_env.cli.main import missing_action

    missing_action(parser)
