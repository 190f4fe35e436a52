"""``python -m memledger``: the same as the ``memledger`` console script."""

from memledger.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
