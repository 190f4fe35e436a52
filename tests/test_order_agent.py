"""The worked example (issue 11, item 10): seed 000's order 7842, run as shipped in
examples/order_agent.py, with the preference memory and without it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "order_agent.py"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("order_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["order_agent"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_order_7842_with_and_without_the_preference(tmp_path: Path) -> None:
    agent = example()
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    remembered = agent.run(tmp_path / "with", with_preference=True)
    forgotten = agent.run(tmp_path / "without", with_preference=False)
    packet = remembered.packet
    # the packet: policy and live state on top, the revised handbook page, the prior
    # case with what it does not prove, the preference to verify, the request last
    assert packet.index("constraints:") < packet.index("live_state:") < packet.index("memories:")
    assert "status: CREDIT_HOLD" in packet and "authoritative: true" in packet
    assert "handbook.md > Credit hold" in packet and "Revised 2026-10-27" in packet
    assert "one-time exception, for that order only" in packet
    assert "said_in_conversation: not_a_setting" in packet
    assert "operational_setting: verify_in_account_service" in packet
    assert packet.rstrip().endswith("request: Release order 7842 like the last urgent shipment")
    assert "does not approve 7842" in remembered.reply
    # the gate refuses the release either way, for the same live reasons
    assert not remembered.gate_allowed and not forgotten.gate_allowed
    assert (
        remembered.gate_reasons
        == forgotten.gate_reasons
        == [
            "credit_hold: order 7842 is CREDIT_HOLD",
            "finance_approval: no Finance approval recorded",
        ]
    )
    # without the memory the agent asks exactly one more question: the delivery day
    assert forgotten.questions[: len(remembered.questions)] == remembered.questions
    assert forgotten.questions[len(remembered.questions) :] == [
        "Which delivery day do you want once it is released?"
    ]
    assert "delivery_preference" not in forgotten.packet
    assert remembered.replay_matches and forgotten.replay_matches


def test_the_example_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"gate_allowed": false' in done.stdout
