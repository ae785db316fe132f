"""Every `macsql` name the benchmarks, scripts and examples import exists.

They import inside functions too (to keep start-up cheap), where a module that moved is only
noticed when that function runs: a benchmark that cleared its caches through an old module
path failed on its first timed reply.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("benchmarks", "scripts", "examples")


def _imports(path: Path) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("macsql"):
            out += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(alias.name, None) for alias in node.names if alias.name.startswith("macsql")]
    return out


def _resolves(module: str, name: str | None) -> bool:
    try:
        imported = importlib.import_module(module)
    except ImportError:
        return False
    if name is None or hasattr(imported, name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ImportError:
        return False
    return True


def test_every_macsql_import_of_the_benchmarks_scripts_and_examples_resolves() -> None:
    files = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    imports = [(path, module, name) for path in files for module, name in _imports(path)]
    assert len(imports) > 50  # the benchmarks import macsql throughout
    missing = [
        f"{path.relative_to(ROOT)}: from {module} import {name}"
        for path, module, name in imports
        if not _resolves(module, name)
    ]
    assert not missing, missing
