"""The ``gpucluster`` command line: :mod:`.main` builds the parser from one module per subcommand, each with a
``register(sub: Subparsers)`` that adds its parser and a ``run(args)`` that carries it out."""

import argparse

Subparsers = argparse._SubParsersAction
"""The type of ``ArgumentParser.add_subparsers()``' result, which each subcommand's ``register`` takes (argparse
names it with a leading underscore; this is the one place that reads that name)."""
