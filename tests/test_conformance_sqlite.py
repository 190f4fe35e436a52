"""The conformance suite on the embedded SQLite store, one real file per store."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memledger.testing.conformance import StoreConformance


class TestSQLiteConformance(StoreConformance):
    @pytest.fixture
    def fresh_url(self, tmp_path_factory: pytest.TempPathFactory) -> Callable[[], str]:
        return lambda: f"sqlite:///{tmp_path_factory.mktemp('store') / 'memledger.db'}"
