"""The conformance suite every canonical store must pass.

Subclass :class:`StoreConformance` in a test module and provide a
``fresh_url`` fixture: a callable that returns the URL of a new, empty store
each time it is called. pytest then runs every invariant of DESIGN.md that the
store covers against it::

    class TestSQLite(StoreConformance):
        @pytest.fixture
        def fresh_url(self, tmp_path_factory):
            return lambda: f"sqlite:///{tmp_path_factory.mktemp('db') / 'm.db'}"

Needs the ``testing`` extra (pytest, hypothesis).
"""

from __future__ import annotations

from memledger.testing.conformance._access import AccessChecks
from memledger.testing.conformance._atomicity import AtomicityChecks
from memledger.testing.conformance._base import Base
from memledger.testing.conformance._compaction import CompactionChecks
from memledger.testing.conformance._erasure import ErasureChecks, ExpiryChecks
from memledger.testing.conformance._forgetting import ForgettingChecks
from memledger.testing.conformance._input import InputChecks
from memledger.testing.conformance._properties import PropertyChecks
from memledger.testing.conformance._revocation import RevocationChecks
from memledger.testing.conformance._rows import RowChecks
from memledger.testing.conformance._service import ServiceChecks
from memledger.testing.conformance._story import StoryChecks
from memledger.testing.conformance._undo import ConsolidationChecks, RollbackChecks, UndoChecks
from memledger.testing.conformance._workers import WorkerChecks

__all__ = ["StoreConformance"]


class StoreConformance(
    StoryChecks,
    AtomicityChecks,
    RevocationChecks,
    ForgettingChecks,
    ErasureChecks,
    ExpiryChecks,
    UndoChecks,
    RollbackChecks,
    ConsolidationChecks,
    AccessChecks,
    RowChecks,
    CompactionChecks,
    InputChecks,
    PropertyChecks,
    ServiceChecks,
    WorkerChecks,
    Base,
):
    """Invariants 1-8 of DESIGN.md as far as the canonical store carries them, and the
    service's state: API keys, families registered per tenant, review decisions."""
