"""MkDocs hook: the reference pages, generated from the code at every build.

- `reference/settings.md` from the `Context` classes (`macsql.core.settings_reference`);
- `reference/cli.md` from the `macsql` command's argparse parsers, and its exit codes;
- `reference/ask-json.md` from the result model (`macsql.core.results.Result`).

Nothing is fetched: the pages come from the installed package. `render_pages()` is what the
hook adds; tests call it too.
"""

from __future__ import annotations

import json
import os
from typing import Any

GENERATED_NOTE = "<!-- Generated from the code by docs/hooks/reference_pages.py; do not edit. -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_page() -> str:
    from macsql.core.settings_reference import settings_by_pipeline

    groups = {
        "all": "Every pipeline",
        "macsql": "MAC-SQL (`macsql`, and the first stage of `macsql+sqlfix`)",
        "sqlfix": "SQLFixAgent (`sqlfix`, and the second stage of `macsql+sqlfix`)",
        "r3": "R^3 (`r3`)",
    }
    lines = [
        GENERATED_NOTE,
        "# Settings",
        "",
        "Every setting is a field of `macsql.core.context.Context`. Set one with",
        "`--set FIELD=VALUE` on the command line (`--set help` prints this list), as a keyword",
        "of `macsql.ask(...)` / `macsql.connect(...)`, in `Context(...)` for a graph, or in the",
        "assistant's configuration in LangGraph Studio. Lists are given comma-separated on the",
        "command line; `none` (or an empty value) empties a setting that may be empty. Each",
        "value is checked when the settings are built: a wrong type or a value under the",
        "minimum is one error naming the field.",
        "",
    ]
    for group, fields in settings_by_pipeline().items():
        lines += [f"## {groups.get(group, group)}", ""]
        lines += ["| setting | type | default | what it does |", "| --- | --- | --- | --- |"]
        for field in fields:
            extra = f" Minimum: {field.minimum:g}." if field.minimum is not None else ""
            lines.append(
                f"| `{field.name}` | {_cell(field.type)} | `{_cell(field.default_text)}` "
                f"| {_cell(field.description)}{extra} |"
            )
        lines.append("")
    return "\n".join(lines)


def _help_text(parser: Any) -> str:
    return str(parser.format_help()).rstrip()


def cli_page() -> str:
    from macsql.cli import exit_codes
    from macsql.cli.main import build_parser
    from macsql.database.loaders.command import build_parser as load_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal; the page has one width
    top = build_parser()
    commands = top._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    lines = [
        GENERATED_NOTE,
        "# Command line",
        "",
        "Every command and option of `macsql`, as `macsql COMMAND --help` prints them.",
        "",
        "## Exit codes",
        "",
        "| code | meaning |",
        "| --- | --- |",
        "| 0 | the command did what it was asked (`ask`: a SQL ran without error) |",
        f"| {exit_codes.EXIT_FAILED} | `ask`: the run ended without a SQL that ran; `eval`: the "
        "figures would not measure the model (most items got no SQL) |",
        f"| {exit_codes.EXIT_USAGE} | a usage or configuration error, said in one line: a bad "
        "option, no model configured, a database that cannot be opened, a server that is down |",
        f"| {exit_codes.EXIT_PAUSED} | `ask`: the run waits for a person to approve its SQL "
        "(`approve_sql`); the SQL and the thread to resume are printed |",
        f"| {exit_codes.EXIT_PARTIAL} | `score`: fewer predictions than questions, without "
        "`--partial` |",
        f"| {exit_codes.EXIT_BROKEN_PIPE} | the reader of the output went away (`| head`) |",
        "| 130 | interrupted (Ctrl-C) |",
        "",
        "## macsql",
        "",
        "```text",
        _help_text(top),
        "```",
        "",
    ]
    for name in commands:
        if name == "load-postgres":
            continue  # an alias of load
        if name == "load":
            parser = load_parser()
        else:
            parser = build_parser(name)._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
        lines += [f"## macsql {name}", "", "```text", _help_text(parser), "```", ""]
    return "\n".join(lines)


def _type_text(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_type_text(s, defs) for s in schema["anyOf"])
    if "enum" in schema:
        return " \\| ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(schema.get('items', {}), defs)}"
    if kind == "object":
        return "object"
    return str(kind)


def ask_json_page() -> str:
    from macsql.core.results import result_json_schema

    schema = result_json_schema()
    defs = schema.get("$defs", {})
    lines = [
        GENERATED_NOTE,
        "# `ask --json`",
        "",
        "`macsql ask --json` prints one JSON object, and `macsql.ask(...)` returns the same",
        "record as a `macsql.Result` (`result.to_dict()`). **Every key is always present**:",
        'a key that does not apply to a run is `null` or empty (`[]`, `{}`, `""`), so a script',
        'that reads `result["rows"]` works exactly when something went wrong. Keys marked',
        "sqlfix or r3 are filled by that pipeline only.",
        "",
        "| key | type | what it holds |",
        "| --- | --- | --- |",
    ]
    for key, prop in schema["properties"].items():
        description = prop.get("description", "")
        lines.append(f"| `{key}` | {_cell(_type_text(prop, defs))} | {_cell(description)} |")
    lines += ["", "## JSON Schema", "", "```json", json.dumps(schema, indent=2), "```", ""]
    return "\n".join(lines)


def render_pages() -> dict[str, str]:
    return {
        "reference/settings.md": settings_page(),
        "reference/cli.md": cli_page(),
        "reference/ask-json.md": ask_json_page(),
    }


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, content in render_pages().items():
        files.append(File.generated(config, path, content=content))
    return files
