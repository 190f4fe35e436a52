"""``--plot``: recall@k per category and retriever as a PNG (needs the ``bench`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memledger.errors import InvalidInputError
from memledger.eval.locomo._harness import GROUPS, Report


class PlotUnavailableError(InvalidInputError):
    """matplotlib is missing: install the ``bench`` extra."""


def plot(reports: Sequence[Report], path: Path) -> None:
    """One panel per group (category, overall_1_4, overall); a line per retriever over k."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailableError(
            "--plot needs matplotlib: pip install 'memledger[bench]'"
        ) from None
    groups = [g for g in GROUPS if any(g in r.recall() for r in reports)]
    columns = min(len(groups), 4) or 1
    rows = -(-len(groups) // columns) or 1
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 2.8 * rows), sharey=True, squeeze=False
    )
    for index, group in enumerate(groups):
        axis = axes[index // columns][index % columns]
        for report in reports:
            by_k = report.recall().get(group)
            if by_k is None:
                continue
            ks = sorted(by_k)
            axis.plot(ks, [by_k[k] for k in ks], marker="o", label=report.retriever)
        axis.set_title(f"{group} (n={reports[0].counts()[group]})", fontsize=9)
        axis.set_xlabel("k")
        axis.set_ylim(0.0, 1.0)
        axis.grid(True, alpha=0.3)
    for index in range(len(groups), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    axes[0][0].set_ylabel("evidence recall@k")
    axes[0][0].legend(fontsize=8)
    figure.suptitle("LoCoMo turn recall@k", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=110)
    plt.close(figure)
