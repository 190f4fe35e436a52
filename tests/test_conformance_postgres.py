"""The conformance suite on the PostgreSQL store: the same checks as on SQLite, one new
database of a private server per store."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memledger.testing.conformance import StoreConformance
from memledger.testing.postgres import PostgresServer


class TestPostgresConformance(StoreConformance):
    @pytest.fixture
    def fresh_url(self, postgres: PostgresServer) -> Callable[[], str]:
        return postgres.create_database
