"""The layout that lets the tree be its own map: no import cycle among grader's modules, no
module too long to read as one concern, and few modules at the top of grader/.

The import graph is read statically (ast), from every module of the package, counting an
import wherever it stands: at module level, inside a function, or under `TYPE_CHECKING`. A
deferred import still makes one module depend on another, so a cycle through one is still a
two-way flow. An import of `grader.a.b` is an edge to `grader.a.b` alone, not to the package
`grader.a` whose `__init__` Python also runs: that `__init__` is a facade, naming only its own
package's modules (checked here too), and importing one module of a package does not depend on
the others it names. So intake may use `grader.notebook.parts` while the notebook facade also
names the kernel's `check` and `submit` for students' cells, which call `grader.student.check`.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[1] / "grader"
MAX_MODULE_LINES = 550
# The sandbox's server is run by path as a stdlib-only script (`python -I server.py`), outside
# the package, so it can import none of its siblings as modules: it stays one file, and its
# docstring says why.
ONE_FILE_SCRIPTS = {"sandbox/server.py": "Why one file"}
MAX_TOP_LEVEL_MODULES = 15


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at `root`."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """Module of the package -> the line of `name`'s first import of it, wherever it stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from grader.a import b` imports the module grader.a.b where there is one.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import grader.a.b.C`: C is a name
                target = target.rpartition(".")[0]
            if target and target != name:
                found.setdefault(target, node.lineno)
    return found


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """Module -> the modules of the same package it imports, each with the line that does."""
    modules = module_names(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str]:
    """One cycle of `graph` as [a, b, ..., a], or [] if it has none."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        # Depth-first, without recursion: the path from `start`, and what is left to visit.
        path, on_path = [start], {start}
        pending = [iter(sorted(graph[start]))]
        while pending:
            following = next(pending[-1], None)
            if following is None:
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                pending.pop()
                continue
            if following in on_path:
                return [*path[path.index(following) :], following]
            if following not in done:
                path.append(following)
                on_path.add(following)
                pending.append(iter(sorted(graph[following])))
    return []


def describe(cycle: list[str], graph: dict[str, dict[str, int]], root: Path) -> str:
    modules = module_names(root)
    steps = [
        f"{first} -> {second} ({modules[first].relative_to(root.parent)}:{graph[first][second]})"
        for first, second in itertools.pairwise(cycle)
    ]
    return "import cycle:\n  " + "\n  ".join(steps)


def test_no_module_of_grader_imports_itself_back() -> None:
    graph = import_graph(GRADER)
    cycle = find_cycle(graph)
    assert not cycle, describe(cycle, graph, GRADER)


def test_a_package_facade_names_only_its_own_modules() -> None:
    graph = import_graph(GRADER)
    for name, path in module_names(GRADER).items():
        if path.name == "__init__.py" and name != "grader":
            outside = [target for target in graph[name] if not target.startswith(f"{name}.")]
            assert not outside, f"{path} imports {outside}: a facade names its own modules"


def test_a_cycle_through_a_deferred_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "shop"
    (package / "orders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "orders" / "__init__.py").write_text("")
    (package / "orders" / "cart.py").write_text("from shop.prices import total\n")
    (package / "prices.py").write_text(
        "def total() -> int:\n    from shop.orders import cart\n    return 0\n"
    )
    (package / "stock.py").write_text("import shop.prices\n")
    graph = import_graph(package)
    assert graph["shop.stock"] == {"shop.prices": 1}
    assert find_cycle(graph) == ["shop.orders.cart", "shop.prices", "shop.orders.cart"]
    (package / "prices.py").write_text("def total() -> int:\n    return 0\n")
    assert find_cycle(import_graph(package)) == []


def test_no_module_of_grader_is_past_the_line_limit() -> None:
    over = {
        str(path.relative_to(GRADER)): lines
        for path in GRADER.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
        and str(path.relative_to(GRADER)) not in ONE_FILE_SCRIPTS
    }
    assert not over, f"over {MAX_MODULE_LINES} lines: split along a seam of concern: {over}"


@pytest.mark.parametrize("script", sorted(ONE_FILE_SCRIPTS))
def test_a_script_kept_in_one_file_says_why(script: str) -> None:
    docstring = ast.get_docstring(ast.parse((GRADER / script).read_text(encoding="utf-8")))
    assert docstring and ONE_FILE_SCRIPTS[script] in docstring


def test_the_top_of_grader_holds_few_modules() -> None:
    top = sorted(path.name for path in GRADER.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules at the top of grader/: {top}"
