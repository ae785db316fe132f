"""The floor plan: every folder is one layer of the import contract, and the contract holds.

`lint-imports` (import-linter) checks the contracts in pyproject.toml. These tests check the
contracts themselves: that they name every folder that holds code, and that an import going up
a layer, or a new cycle between layers, makes `lint-imports` fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
PACKAGE_DIR: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
CONTRACTS: list[dict[str, object]] = PYPROJECT["tool"]["importlinter"]["contracts"]


def _layer_names(contract: dict[str, object]) -> set[str]:
    names: set[str] = set()
    containers = [str(c) for c in contract.get("containers", [])]  # type: ignore[attr-defined]
    for layer in contract["layers"]:  # type: ignore[attr-defined]
        for name in str(layer).strip("()").split("|"):
            name = name.strip().strip("()")
            names.update(f"{c}.{name}" for c in containers) if containers else names.add(name)
    return names


def _contracted() -> set[str]:
    return set().union(*(_layer_names(c) for c in CONTRACTS))


def test_every_package_is_a_layer_or_inside_one() -> None:
    contracted = _contracted()
    for package in PACKAGE_DIR:
        if package == "macsql":
            continue
        inside = [layer for layer in contracted if package == layer or package.startswith(layer)]
        assert inside, f"{package} is in no layer of the import contract"


def test_every_subpackage_of_nodes_is_a_layer_of_the_nodes_contract() -> None:
    subpackages = {p for p in PACKAGE_DIR if p.startswith("macsql.nodes.")}
    assert subpackages, "nodes/ is split into pipeline folders"
    assert subpackages <= _contracted()


def test_every_python_folder_of_the_checkout_is_installed() -> None:
    """A folder of modules that package-dir does not map would sit in no layer (and not ship)."""
    mapped = {Path(folder) for folder in PACKAGE_DIR.values()}
    outside = {"tests", "benchmarks", "examples", "scripts", "docs", "macsql"}
    for init in ROOT.glob("**/__init__.py"):
        folder = init.parent.relative_to(ROOT)
        if folder.parts[0] in outside or folder.parts[0].startswith("."):
            continue
        assert folder in mapped, f"{folder}/ holds a package that pyproject.toml does not map"


def test_the_package_root_links_every_folder_under_its_import_name() -> None:
    for package, folder in PACKAGE_DIR.items():
        if package.count(".") != 1:
            continue
        link = ROOT / "macsql" / package.split(".")[1]
        assert link.is_symlink(), f"macsql/{link.name} should link to {folder}/"
        assert link.resolve() == (ROOT / folder).resolve()


def _tree_copy(tmp_path: Path) -> Path:
    """The code and its configuration, without tests or data (links kept as links)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(ROOT / "pyproject.toml", tree)
    shutil.copytree(ROOT / "macsql", tree / "macsql", symlinks=True)
    for folder in {f.split("/")[0] for f in PACKAGE_DIR.values()} - {"macsql"}:
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [exe, "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_contract_fails_on_an_upward_import_and_on_a_new_cycle(tmp_path: Path) -> None:
    tree = _tree_copy(tmp_path)
    kept = _lint_imports(tree)
    assert kept.returncode == 0, kept.stdout + kept.stderr

    # core is the bottom layer: importing the wiring from it goes up every layer.
    context = tree / "core" / "context.py"
    original = context.read_text("utf-8")
    context.write_text(original + "\nimport macsql.graph.registry  # noqa\n", "utf-8")
    upward = _lint_imports(tree)
    assert upward.returncode != 0
    assert "macsql.core is not allowed to import macsql.graph" in upward.stdout
    context.write_text(original, "utf-8")

    # A cycle through one of the graph's own modules (the kind a module outside every layer hid).
    routing = tree / "graph" / "routing.py"
    routing.write_text(
        routing.read_text("utf-8") + "\nimport macsql.evals.runner  # noqa\n", "utf-8"
    )
    cycle = _lint_imports(tree)
    assert cycle.returncode != 0
    assert "macsql.graph is not allowed to import macsql.evals" in cycle.stdout


def test_every_module_of_the_package_root_is_a_layer() -> None:
    """Modules placed directly in macsql/ (the Python API) belong to package `macsql` itself,
    which no folder's layer covers: each must be named in the contract."""
    contracted = _contracted()
    modules = {f"macsql.{p.stem}" for p in (ROOT / "macsql").glob("*.py") if p.stem != "__init__"}
    assert modules, "the package root holds the Python API"
    assert modules <= contracted, f"not in a layer: {sorted(modules - contracted)}"
