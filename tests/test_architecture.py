"""The import rules of ``docs/architecture.md``, read from the source with ``ast``:
every ``import`` counts, at module level, inside a function or under
``TYPE_CHECKING``.

* the domain (``memledger.domain``) imports nothing of the project but itself and
  ``memledger.errors``;
* the core (domain, store, index, the read and write paths, the gate, freshness, the
  corpus, session memory) never imports an edge (the HTTP API,
  the CLI, MCP, the client, the web page, the integrations, ``serve``);
* an edge never imports a store's internals (``memledger.store._*``), and no module
  outside a core package, or outside the wire packages (``memledger.wire``,
  ``memledger.wire_models``), imports that package's private modules (the benchmarks
  and the test kit aside);
* the store imports neither the index nor the read or write paths, and the index
  imports neither path;
* the index backends (``derived`` for SQLite, ``postgres``) build on shared modules
  and never on each other, and no circle of imports is left inside
  ``memledger.index``;
* nothing below the facade imports it (``memledger.memory``).
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


def imports_of(path: Path, *, name: str | None = None) -> Iterator[str]:
    """The ``memledger`` modules ``path`` imports, resolved to a module (``from x
    import y`` names ``x.y`` when that is a module, else ``x``); ``name`` is the
    module's own name when ``path`` is outside the source tree."""
    here = name or module_name(path)
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


EDGES = (
    "api",
    "cli",
    "mcp",
    "client",
    "web",
    "integrations",
    "serve",
    "serve_processes",
    "serve_threads",
)
BESIDE = ("eval", "testing")
"""The benchmarks and the test kit: they may use any floor, privates included."""
CORE = ("domain", "store", "index", "read", "write", "gate", "freshness", "corpus", "session")
SHAPES = ("wire", "wire_models")
"""The edges' shapes (the JSON wire format and its models): packages whose private modules
are their own, as a core package's are."""


def layer(module: str) -> str:
    """``memledger.read.recall`` -> ``read``; ``memledger.memory`` -> ``memory``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def project_imports() -> set[tuple[str, str]]:
    """Every ``(importer, imported)`` pair of project modules."""
    return {
        (module_name(path), imported)
        for path in PACKAGE.rglob("*.py")
        for imported in imports_of(path)
        if imported.startswith("memledger.") or imported == "memledger"
    }


def test_the_core_never_imports_an_edge() -> None:
    found = {(a, b) for a, b in project_imports() if layer(a) in CORE and layer(b) in EDGES}
    assert found == set()


def test_an_edge_never_imports_a_stores_internals() -> None:
    found = {
        (a, b)
        for a, b in project_imports()
        if layer(a) in EDGES and b.startswith("memledger.store._")
    }
    assert found == set()


def test_a_core_packages_private_modules_are_its_own() -> None:
    found = set()
    for a, b in project_imports():
        parts = b.split(".")
        private = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
        if private is None or private < 2 or layer(b) not in (*CORE, *SHAPES):
            continue  # public, or private to memledger itself (memledger._files)
        owner = ".".join(parts[:private])
        if not (a == owner or a.startswith(owner + ".")) and layer(a) not in BESIDE:
            found.add((a, b))
    assert found == set()


def test_the_store_and_the_index_stay_below_the_paths() -> None:
    found = {
        (a, b)
        for a, b in project_imports()
        if (layer(a) == "store" and layer(b) in ("index", "read", "write"))
        or (layer(a) == "index" and layer(b) in ("read", "write"))
    }
    assert found == set()


def test_nothing_below_the_facade_imports_it() -> None:
    importers = {a for a, b in project_imports() if layer(a) in CORE and b == "memledger.memory"}
    assert importers == set(), (
        "a module below the facade imports memledger.memory: give it the ports it uses"
    )


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
    module = tmp_path / "example.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from memledger.errors import InvalidInputError\n"
        "if TYPE_CHECKING:\n"
        "    from memledger.ports import Store\n"
        "def later() -> None:\n"
        "    import memledger.memory\n",
        encoding="utf-8",
    )
    found = set(imports_of(module, name="memledger.example"))
    assert {"memledger.errors", "memledger.ports", "memledger.memory"} <= found


def test_the_names_that_moved_are_still_found_where_they_were_with_a_warning() -> None:
    from memledger.index import backends, derived

    with pytest.warns(DeprecationWarning, match=r"memledger\.index\.backends\.open_index"):
        assert derived.open_index is backends.open_index  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        derived.no_such_name  # type: ignore[attr-defined]  # noqa: B018


SHARED = ("_files", "_sqlite", "_sqlite_meta", "_openai_http", "_openai_chat", "deadline")
"""Modules at the top of the package that several floors use: they stand on the ground."""


def test_the_shared_helpers_stand_on_the_ground() -> None:
    ground = {f"memledger.{m}" for m in SHARED} | {"memledger.errors", "memledger.ports"}
    found = {
        (a, b)
        for a, b in project_imports()
        if a.removeprefix("memledger.") in SHARED
        and b not in ground
        and not b.startswith("memledger.domain")
    }
    assert found == set()
