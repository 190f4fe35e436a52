"""The import rules the layout keeps, read from the source with ``ast``: every
``import`` counts, at module level, inside a function or under ``TYPE_CHECKING``.

* the domain (``memledger.domain``) imports nothing of the project but itself and
  ``memledger.errors``;
* the index backends (``derived`` for SQLite, ``postgres``) build on shared modules
  and never on each other, and no circle of imports is left inside
  ``memledger.index``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "memledger"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> Iterator[str]:
    """The ``memledger`` modules ``path`` imports, resolved to a module (``from x
    import y`` names ``x.y`` when that is a module, else ``x``)."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            for alias in node.names:
                candidate = f"{origin}.{alias.name}"
                yield candidate if candidate in MODULES else origin


MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}


def graph(prefix: str) -> dict[str, set[str]]:
    """Imports among the modules under ``prefix`` (``memledger.index``)."""
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        if name == prefix or name.startswith(prefix + "."):
            edges[name] = {
                m
                for m in imports_of(path)
                if m != name and m in MODULES and (m == prefix or m.startswith(prefix + "."))
            }
    return edges


def circle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports in ``edges``, as the modules around it, or ``None``."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_domain_imports_only_itself_and_the_errors() -> None:
    outside = {
        (module_name(path), imported)
        for path in (PACKAGE / "domain").rglob("*.py")
        for imported in imports_of(path)
        if imported.startswith("memledger")
        and not imported.startswith("memledger.domain")
        and imported != "memledger.errors"
    }
    assert outside == set()


def test_the_index_backends_never_import_each_other() -> None:
    edges = graph("memledger.index")
    assert "memledger.index.postgres" not in edges["memledger.index.derived"]
    assert "memledger.index.derived" not in edges["memledger.index.postgres"]
    found = circle(edges)
    assert found is None, " -> ".join(found or [])


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"a2"}, "a2": set(), "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ],
)
def test_a_circle_is_found_and_named(
    edges: dict[str, set[str]], expected: list[str] | None
) -> None:
    assert circle(edges) == expected


def test_imports_are_read_at_every_level(tmp_path: Path) -> None:
    """A function-level or TYPE_CHECKING import counts like any other."""
    module = PACKAGE / "index" / "catchup.py"
    assert "memledger.errors" in set(imports_of(module))
    derived = set(imports_of(PACKAGE / "index" / "backends.py"))
    assert {"memledger.index.derived", "memledger.index.postgres"} <= derived
