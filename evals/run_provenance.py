"""What produced a run's prompts: the macsql version and commit, the prompt templates, the
settings that shape a prompt, and the teacher's model per agent.

A student fine-tuned on one version's prompts and served by another sees other inputs; the
export's dataset card reads this record so that a user can serve the version that made the data.

Settings are recorded by one rule: every field of the run's Context except those that cannot
change what an agent is sent (connection details, the API key, retries, timeouts of the model
call, interactive approval) and the models themselves, which are recorded apart as the teacher.
A setting added later is therefore recorded unless someone decides it cannot affect a prompt:
recording one too many costs nothing, missing one hides a difference.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import fields
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from macsql.core.context import Agent, Context

# Fields that never reach a prompt. `base_url` and `api_key` are also secrets or private.
NOT_PROMPT_SETTINGS = frozenset(
    {"base_url", "api_key", "model_timeout", "model_max_retries", "approve_sql"}
)
_SOURCE = Path(__file__).resolve().parents[1]


def macsql_version() -> str | None:
    try:
        return metadata.version("macsql")
    except metadata.PackageNotFoundError:
        return None


def git_commit(source: Path = _SOURCE) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout macsql runs from; (None, None) outside a git checkout
    (an installed wheel) or without git."""
    if not (source / ".git").exists():
        return None, None
    try:
        head = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
        status = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head or None, bool(status.strip())


def prompt_templates_digest() -> str:
    """SHA-256 over every prompt template's name and text: equal digests, equal templates."""
    digest = hashlib.sha256()
    folder = resources.files("macsql.prompts")
    for entry in sorted((p for p in folder.iterdir() if p.name.endswith(".txt")), key=str):
        digest.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()


def prompt_settings(context: Context) -> dict[str, Any]:
    """Every setting that may shape a prompt, JSON-ready."""
    models = {Agent(a).model_field for a in Agent} | {"model"}
    out: dict[str, Any] = {}
    for f in fields(context):
        if f.name in NOT_PROMPT_SETTINGS or f.name in models:
            continue
        value = getattr(context, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def teacher_models(context: Context) -> dict[str, str]:
    """The model of each agent (its override, else the default). SQLFixAgent's SQLTool names
    "decomposer" when it reuses the Decomposer, and so its model."""
    models = {agent.value: context.model_for(agent) for agent in Agent}
    if models[Agent.SQL_TOOL] == Agent.DECOMPOSER.value:
        models[Agent.SQL_TOOL] = models[Agent.DECOMPOSER]
    return models


def run_provenance(context: Context | None) -> dict[str, Any]:
    """The record `run.json` keeps; `context` is None for a gold run (no prompts)."""
    commit, dirty = git_commit()
    record: dict[str, Any] = {
        "macsql_version": macsql_version(),
        "git_commit": commit,
        "git_dirty": dirty,
        "prompt_templates_sha256": prompt_templates_digest(),
    }
    if context is not None:
        record["teacher_model"] = context.model
        record["agent_models"] = teacher_models(context)
        record["prompt_settings"] = prompt_settings(context)
    return record
