"""One pipeline registry: `graph/registry.py` and `langgraph.json` name the same graphs."""

from __future__ import annotations

import json
import tomllib
from importlib import import_module
from pathlib import Path

import pytest

from macsql.graph.registry import get_pipeline, pipeline_names, resolve_pipeline

ROOT = Path(__file__).resolve().parents[1]
SERVER_GRAPHS: dict[str, dict[str, str]] = json.loads((ROOT / "langgraph.json").read_text())[
    "graphs"
]


def _module_name(file: str) -> str:
    """The import name of a file in the checkout, through pyproject's package-dir mapping."""
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    package_of_folder = {folder: package for package, folder in package_dir.items()}
    parts = Path(file).with_suffix("").parts
    return ".".join([package_of_folder[parts[0]], *parts[1:]])


def test_the_registry_and_the_server_config_name_the_same_pipelines() -> None:
    assert list(SERVER_GRAPHS) == pipeline_names()


@pytest.mark.parametrize("name", pipeline_names())
def test_each_server_path_is_the_registered_compiled_graph(name: str) -> None:
    file, _, attr = SERVER_GRAPHS[name]["path"].rpartition(":")
    module = import_module(_module_name(file))
    assert Path(str(module.__file__)).resolve() == (ROOT / file).resolve()
    assert getattr(module, attr) is get_pipeline(name)
    # The server loads the file by path, a fresh module: it must build the same graph.
    by_path = resolve_pipeline(f"{ROOT / file}:{attr}")
    assert by_path is not get_pipeline(name)
    assert by_path.get_graph().draw_mermaid() == get_pipeline(name).get_graph().draw_mermaid()


def test_resolving_an_unknown_pipeline_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="macsql"):
        resolve_pipeline("no-such-pipeline")
