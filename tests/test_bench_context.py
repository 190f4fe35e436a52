"""``memledger bench context``: packets built cold, hot and prepared on a small chat,
their size against the whole history, and seed 001's cost per call."""

from __future__ import annotations

import json
from pathlib import Path

from memledger.eval.bench_context import PRICE_PER_MILLION, run
from memledger.index.embedders import HashingEmbedder
from memledger.tokens import ApproxBpeTokenizer

TURNS = [
    ("user", "Always answer with metric units when I ask about distances."),
    ("assistant", "Understood: metric units for distances from now on."),
    ("user", "I am planning a cycling trip from Porto to Lisbon next spring."),
    ("assistant", "That is about 310 kilometres along the coast; plan five days."),
    ("user", "My bike is a steel touring frame with 700c wheels."),
    ("assistant", "A touring frame suits the coastal route well."),
]


def chat(tmp_path: Path) -> Path:
    session = [{"speaker": s, "dia_id": f"D1:{n}", "text": t} for n, (s, t) in enumerate(TURNS, 1)]
    data = [
        {
            "sample_id": "chat-1",
            "conversation": {
                "speaker_a": "user",
                "speaker_b": "assistant",
                "session_1_date_time": "12:00 pm on 15 March, 2024",
                "session_1": session,
            },
            "qa": [
                {
                    "question": "How far is the cycling trip?",
                    "answer": "310 km",
                    "evidence": ["D1:4"],
                    "category": 4,
                },
                {
                    "question": "What bike do I ride?",
                    "answer": "steel touring",
                    "evidence": ["D1:5"],
                    "category": 4,
                },
                {
                    "question": "Which units do I want?",
                    "answer": "metric",
                    "evidence": ["D1:1"],
                    "category": 4,
                },
            ],
        }
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(data))
    return path


def test_the_context_benchmark_reports_every_tier_and_the_cost(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    report = run(
        chat(tmp_path),
        budget=400,
        questions=2,
        embedder=HashingEmbedder(),
        progress=lambda name, done, total: seen.append((name, done, total)),
    )
    assert (report.conversations, report.packets, report.budget) == (1, 2, 400)
    assert seen == [("chat-1", 1, 2), ("chat-1", 2, 2)]
    whole = ApproxBpeTokenizer().count("\n".join(f"{s}: {t}" for s, t in TURNS))
    assert report.history_tokens_mean == whole == report.history_tokens_max
    assert 0 < report.packet_tokens_mean <= report.packet_tokens_max <= 400
    assert report.cost_per_call_history == round(whole * PRICE_PER_MILLION / 1e6, 6)
    for timing in (report.cold, report.hot, report.prepared):
        assert 0 < timing.p50_ms <= timing.p95_ms
    out = report.to_json()
    assert out["corpus"] == "chat.json" and "cores" in out["machine"]  # type: ignore[operator]


def test_the_context_benchmark_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memledger.cli.app import app

    out = tmp_path / "context.json"
    args = [
        "bench",
        "context",
        str(chat(tmp_path)),
        "--questions",
        "1",
        "--budget",
        "300",
        "--embedder",
        "hashing",
        "--json",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| chat.json | 1 | 300 |" in result.output
    (report,) = json.loads(out.read_text())
    assert report["packets"] == 1 and report["packet_tokens_max"] <= 300
    missing = CliRunner().invoke(app, ["bench", "context", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "no benchmark file" in missing.output
