"""`macsql eval --link-only`: run only the linking stage over a dataset, no model.

Every item gets a record (kept tables, columns and values; gold tables, columns and string
literals; whether it is a strict hit), written to `<out>/linking.jsonl`; an item whose database
is missing or unreadable is recorded with its reason, never dropped. The summary (strict,
column and value recall, the share of columns kept, overall and by database) goes to
`<out>/linking_summary.json`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from macsql.core.context import Context
from macsql.database.connection import resolve_database
from macsql.database.schema import SchemaInfo, load_schema
from macsql.evals.datasets import load_dataset
from macsql.evals.linking_recall import ItemRecall, gold_elements, kept_of, summarise
from macsql.evals.options import EvalOptions
from macsql.linking.stage import run_linking


@dataclass
class LinkEvalResult:
    summary: dict[str, Any]
    records: list[dict[str, Any]]
    out_dir: Path


def run_link_eval(options: EvalOptions) -> LinkEvalResult:
    dataset = load_dataset(options.dataset, options.data_dir, options.split, db_url=options.db_url)  # type: ignore[arg-type]
    items = dataset.items[: options.limit] if options.limit else dataset.items
    context: Context = options.context()
    schemas: dict[str, SchemaInfo | str] = {}
    recalls: list[ItemRecall] = []
    records: list[dict[str, Any]] = []
    for item in items:
        record: dict[str, Any] = {"index": item.index, "db_id": item.db_id}
        if item.skipped or not item.db:
            records.append({**record, "status": "skipped", "error": item.skip_reason})
            continue
        if item.db not in schemas:
            try:
                schemas[item.db] = load_schema(
                    resolve_database(item.db),
                    num_examples=context.num_value_examples,
                    sample_rows=context.sample_rows,
                    timeout=context.query_timeout,
                )
            except Exception as exc:
                schemas[item.db] = f"cannot read the schema: {type(exc).__name__}: {exc}"
        schema = schemas[item.db]
        if isinstance(schema, str):
            records.append({**record, "status": "failed", "error": schema})
            continue
        evidence = item.evidence if context.dataset_style == "bird" else ""
        result = run_linking(schema, item.db, item.question, evidence, context)
        gold = gold_elements(item.gold_sql, schema, schema.dialect)
        recall = ItemRecall(
            item.db_id, gold, kept_of(result.schema), schema.total_columns, result.values
        )
        recalls.append(recall)
        records.append(
            {
                **record,
                "status": "ok",
                "route": result.route,
                **recall.record(),
                "db_id": item.db_id,
            }
        )
    summary = {
        **summarise(recalls),
        "skipped_or_failed": sum(1 for r in records if r["status"] != "ok"),
    }
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "linking.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    (out / "linking_summary.json").write_text(json.dumps(summary, indent=2))
    return LinkEvalResult(summary, records, out)


def link_summary_text(summary: dict[str, Any]) -> str:
    """The summary as a table: overall, then one line per database."""

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"

    lines = [
        "database | items | strict recall | column recall | value recall | columns kept | values",
    ]
    rows = [("overall", summary["overall"]), *summary["by_database"].items()]
    for name, m in rows:
        lines.append(
            f"{name} | {m['items']} | {pct(m['strict_recall'])} | {pct(m['column_recall'])} | "
            f"{pct(m['value_recall'])} | {pct(m['columns_kept_share'])} | {m['mean_values']}"
        )
    if summary.get("skipped_or_failed"):
        lines.append(f"skipped or failed items: {summary['skipped_or_failed']}")
    return "\n".join(lines)
