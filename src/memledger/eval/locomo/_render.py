"""The markdown table and JSON body of ``memledger bench locomo``."""

from __future__ import annotations

from collections.abc import Sequence

from memledger.eval.locomo._harness import GROUPS, Report


def markdown(reports: Sequence[Report]) -> str:
    """Rows retriever x group (categories, overall_1_4, overall); columns recall@k."""
    ks = sorted({k for report in reports for k in report.ks})
    lines = [
        "| retriever | group (questions) | " + " | ".join(f"recall@{k}" for k in ks) + " |",
        "| --- | --- | " + " | ".join("---:" for _ in ks) + " |",
    ]
    for report in reports:
        recall = report.recall()
        counts = report.counts()
        for group in GROUPS:
            if group not in recall:
                continue
            cells = " | ".join(f"{recall[group][k]:.3f}" if k in recall[group] else "" for k in ks)
            lines.append(f"| {report.retriever} | {group} ({counts[group]}) | {cells} |")
    marked = [
        r
        for r in reports
        if r.updates()["update_questions"] or r.updates()["contradiction_questions"]
    ]
    if marked:
        lines += [
            "",
            "| retriever | updated recall@10 | update order | strict update success "
            "| both sides recall@10 |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for report in marked:
            u = report.updates()
            lines.append(
                f"| {report.retriever} | {u['updated_recall_10']:.3f} ({u['update_questions']}) "
                f"| {u['update_order']:.3f} ({u['both_in_top_10']}) "
                f"| {u['strict_update_success']:.3f} ({u['update_questions']}) "
                f"| {u['both_sides_recall_10']:.3f} ({u['contradiction_questions']}) |"
            )
    lines.append("")
    for report in reports:
        latency = report.latency_ms()
        lines.append(
            f"{report.retriever}: {report.questions} questions with evidence, "
            f"top-10 context {report.tokens_top10_mean:,.0f} tokens (approx.) on average, "
            f"search latency p50 {latency['p50']:.2f} ms, p95 {latency['p95']:.2f} ms"
        )
    return "\n".join(lines)


def json_body(
    reports: Sequence[Report], costs: Sequence[dict[str, object]] | None = None
) -> dict[str, object] | list[dict[str, object]]:
    """One report's :meth:`Report.to_json` object, or a list of them for several
    retrievers; with ``costs`` (one per report), each under ``"costs"``."""
    bodies = [report.to_json() for report in reports]
    if costs is not None:
        bodies = [body | {"costs": cost} for body, cost in zip(bodies, costs, strict=True)]
    return bodies[0] if len(bodies) == 1 else bodies
