"""The public surface: a sorted ``__all__`` whose every name resolves."""

from __future__ import annotations

import memledger
import memledger.errors


def test_all_is_sorted_and_complete() -> None:
    assert memledger.__all__ == sorted(memledger.__all__)
    for name in memledger.__all__:
        assert getattr(memledger, name) is not None, name


def test_every_error_is_exported_and_rooted() -> None:
    errors = [getattr(memledger.errors, n) for n in memledger.errors.__all__]
    assert memledger.errors.__all__ == sorted(memledger.errors.__all__)
    for error in errors:
        assert issubclass(error, memledger.MemledgerError), error
        assert error.__name__ in memledger.__all__, error
        assert error.__name__ in (memledger.errors.__doc__ or ""), f"{error} not in the tree"


def test_caller_mistakes_are_builtin_value_and_lookup_errors() -> None:
    assert issubclass(memledger.InvalidInputError, ValueError)
    assert issubclass(memledger.UnknownFamilyError, ValueError)
    assert issubclass(memledger.NotFoundError, LookupError)
    assert issubclass(memledger.StoreError, RuntimeError)
    assert not issubclass(memledger.StoreError, ValueError)
