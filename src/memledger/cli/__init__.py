"""The ``memledger`` command line. ``main`` is the console script's entry point."""

from memledger.cli.app import app, main

__all__ = ["app", "main"]
