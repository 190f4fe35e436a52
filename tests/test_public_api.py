"""The public surface: a sorted ``__all__`` whose every name resolves, and the names
and parameters of it and of :class:`Memory` as ``public_surface.txt`` writes them down."""

from __future__ import annotations

import inspect
from pathlib import Path

import memledger
import memledger.errors
from memledger import Memory


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


SURFACE = Path(__file__).with_name("public_surface.txt")


def memory_surface() -> list[str]:
    """Every public attribute of :class:`Memory`: a method with its parameters and their
    defaults (annotations aside), or a property."""
    lines = []
    for name in sorted(n for n in dir(Memory) if not n.startswith("_")):
        if isinstance(inspect.getattr_static(Memory, name), property):
            lines.append(f"{name} (property)")
            continue
        signature = inspect.signature(getattr(Memory, name))
        bare = signature.replace(
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        lines.append(f"{name}{bare}")
    return lines


def test_the_public_surface_is_the_one_written_down() -> None:
    """``memledger.__all__`` and every method of ``Memory`` with its parameters, as
    ``public_surface.txt`` holds them: a rename or a dropped parameter is a change to
    the file (and to CHANGELOG.md, with a deprecated alias), never an accident."""
    expected = SURFACE.read_text(encoding="utf-8").splitlines()
    found = ["# memledger.__all__", *memledger.__all__, "# Memory", *memory_surface()]
    assert found == expected


def test_the_facade_hands_each_delegated_call_the_ports_it_names() -> None:
    """A method the facade takes from the module that owns it hands that function a
    port bundle the facade has, and the function lives below the facade."""
    delegated = {
        name: inspect.getattr_static(Memory, name)
        for name in dir(Memory)
        if hasattr(inspect.getattr_static(Memory, name), "__through__")
    }
    assert len(delegated) >= 30
    for name, method in delegated.items():
        bundle = method.__through__
        assert isinstance(inspect.getattr_static(Memory, bundle), property), (name, bundle)
        assert method.__wrapped__.__module__.startswith(("memledger.read.", "memledger.write.")), (
            name
        )
        assert next(iter(inspect.signature(method).parameters)) == "self", name
