"""No two modules of `datawell` import each other: not at the top, not inside a function, not
under `if TYPE_CHECKING:`. The import-linter contract "no cycles among siblings" (pyproject.toml)
forbids longer cycles between the modules of one package, but not a package's `__init__` and
one of its own modules importing each other; this reads every import statement itself.

The reading runs in a fresh interpreter (`scan`): CPython 3.11 keeps one AST recursion counter
for all threads (CPython #106905), and langchain-core parses the source of every function a
graph wraps, so a server thread left running by another test of the same pytest worker can make
`ast.parse` here raise `SystemError: AST constructor recursion depth mismatch`."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the folder that holds the `datawell` package


def modules_under(root: Path) -> dict[str, Path]:
    """Every module of the `datawell` package below `root`, by its dotted name."""
    modules = {}
    for path in (root / "datawell").rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that module `name` imports anywhere in it: `from a import b`
    imports the module `a.b` where there is one, else `a`."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {module for module in found if module in modules and module != name}


def mutual_imports(modules: dict[str, Path]) -> set[tuple[str, str]]:
    imported = {name: imports_of(name, path, modules) for name, path in modules.items()}
    return {(a, b) for a, targets in imported.items() for b in targets if a < b and a in imported[b]}


def scan(root: Path) -> set[tuple[str, str]]:
    """`mutual_imports` of the package below `root`, read by a fresh interpreter with no other thread."""
    done = subprocess.run([sys.executable, __file__, str(root)], capture_output=True, text=True, check=True)
    return {(a, b) for a, b in json.loads(done.stdout)}


def test_no_two_modules_import_each_other() -> None:
    assert scan(ROOT) == set()


def test_a_mutual_import_is_seen_wherever_it_stands(tmp_path: Path) -> None:
    """The check itself: under TYPE_CHECKING, inside a function, relative, a package and its module."""
    files = {
        "datawell/__init__.py": "",
        "datawell/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from datawell.b import B\n",
        "datawell/b.py": "def f():\n    from . import a\n",
        "datawell/c/__init__.py": "def g():\n    from datawell.c.d import D\n",
        "datawell/c/d.py": "from datawell.c import g\n",
        "datawell/e.py": "import datawell.a\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert scan(tmp_path) == {("datawell.a", "datawell.b"), ("datawell.c", "datawell.c.d")}


if __name__ == "__main__":
    print(json.dumps(sorted(mutual_imports(modules_under(Path(sys.argv[1]))))))
