"""`macsql eval` end to end for every reply layout a real model uses (issues 12 and 24).

The real langchain-openai client talks to the local scripted OpenAI-compatible server, whose
model answers every agent right, but in one layout per run: the papers' fences, bare SQL, SQL in
prose, unclosed fences, JSON with a `sql` key and Python-literal dicts, `<think>` blocks and
`reasoning_content` holding a wrong draft, replies cut off at the token limit, and structured
output (a server that supports tool calls / JSON schema, and one that rejects them). Each run
must reach EX 100 on Spider dev items that include wide databases (so the Selector runs and its
map is applied), with no fallback recorded except the ones the layout causes.

Issue 24 adds one eval per class of layouts the reader was not shown before (containers without
`;`, several candidate queries, model-family markup), each rotating its class's layouts over the
items and the Selector's answer over its shapes, and two evals against a server that ignores
`response_format`.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from conftest import SPIDER, spider_eval_args
from sqlglot import exp

from macsql.cli.main import main
from macsql.testing.scripted import Reply, ScriptedOpenAIServer, ScriptedReply

pytestmark = pytest.mark.skipif(
    not (SPIDER / "dev.json").exists(), reason="the Spider data is not in /work/shared/data"
)

# concert_singer (narrow), then student_transcripts_tracking, tvshow, world_1, dog_kennels and
# real_estate_properties, whose schemas are wide enough for the Selector.
ITEMS = [0, 1, 507, 585, 702, 918, 1030, 1031]
WIDE = {
    "student_transcripts_tracking",
    "tvshow",
    "world_1",
    "dog_kennels",
    "real_estate_properties",
}
DRAFT = "SELECT 'a draft from the reasoning'"


def _dev() -> list[dict[str, Any]]:
    dev = json.loads((SPIDER / "dev.json").read_text())
    return [dev[i] for i in ITEMS]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Spider folder holding only ITEMS (the databases are the shared ones)."""
    root = tmp_path_factory.mktemp("spider-layouts")
    (root / "dev.json").write_text(json.dumps(_dev()))
    shutil.copy(SPIDER / "tables.json", root / "tables.json")
    (root / "database").symlink_to(SPIDER / "database")
    return root


# --------------------------------------------------------------------------- layouts
# Each layout writes an agent's answer: `sql(query)` for the SQL agents, `fields(obj)` for the
# agents that answer in JSON.


def _fenced_sql(sql: str) -> Reply:
    return f"SQL\n```sql\n{sql}\n```\nQuestion Solved."


def _fenced_json(obj: dict[str, Any]) -> Reply:
    return f"```json\n{json.dumps(obj)}\n```"


def _python_literal(obj: dict[str, Any]) -> Reply:
    # Single quotes, True/None, a trailing comma and a comment: what small models write.
    text = repr(obj)
    return text[:-1] + ",  # that is all\n}"


LAYOUTS: dict[str, tuple[Callable[[str], Reply], Callable[[dict[str, Any]], Reply]]] = {
    "papers": (_fenced_sql, _fenced_json),
    "bare": (lambda sql: f"{sql};", lambda obj: json.dumps(obj)),
    "prose": (
        lambda sql: f"The query that answers this is: {sql}; it reads the needed tables.",
        lambda obj: f"Here is what I found: {json.dumps(obj)} Hope it helps!",
    ),
    "unclosed_fence": (
        lambda sql: f"```sql\n{sql}\n",
        lambda obj: f"```json\n{json.dumps(obj, indent=1)}\n",
    ),
    "json_sql_key": (
        lambda sql: json.dumps({"reasoning": "join then filter", "SQL": f"```sql\n{sql}\n```"}),
        _python_literal,
    ),
    "think": (
        lambda sql: f"<think>\nFirst idea:\n```sql\n{DRAFT}\n```\nNo.\n</think>\n{sql}",
        lambda obj: f"<think>{{'draft': 'ignore me'}}</think>\n{json.dumps(obj)}",
    ),
    "reasoning_content": (
        lambda sql: ScriptedReply(f"```sql\n{sql}\n```", reasoning=f"Draft:\n```sql\n{DRAFT}\n```"),
        lambda obj: ScriptedReply(json.dumps(obj), reasoning='{"verdict": "error"} no...'),
    ),
}


class LayoutResponder:
    """Right answers for every agent of the three pipelines, written in one layout."""

    def __init__(self, layout: str, *, structured: bool = False, cut_off: bool = False) -> None:
        self.gold = {item["question"]: item["query"] for item in _dev()}
        self.flagged = {item["question"] for item in _dev()[::2]}
        self.sql, self.fields = LAYOUTS[layout]
        self.structured = structured
        self.cut_off = cut_off
        self.unknown: list[str] = []

    def question_in(self, prompt: str) -> str:
        line = prompt.rsplit("[Question] ", 1)[-1].splitlines()[0]
        matches = [q for q in self.gold if q in line]
        if not matches:
            self.unknown.append(line)
            raise LookupError(f"no dev question in {line!r}")
        return max(matches, key=len)

    def answer_sql(self, sql: str) -> Reply:
        if self.structured:
            return {"reasoning": "read the schema, then join", "sql": sql}
        return self.sql(sql)

    def answer(self, obj: dict[str, Any]) -> Reply:
        return obj if self.structured else self.fields(obj)

    def selection(self, prompt: str) -> Reply:
        gold = self.gold[self.question_in(prompt)]
        used = {t.name.lower() for t in sqlglot.parse_one(gold, read="sqlite").find_all(exp.Table)}
        schema = prompt.rsplit("<schema>", 1)[-1].split("</schema>", 1)[0]  # not the examples'
        tables = re.findall(r"^# Table: (\S+)", schema, re.M)
        assert tables, "the Selector's prompt names no table"
        if self.structured:
            keep = [
                {"table": t, "keep": "keep_all" if t.lower() in used else "drop_all"}
                for t in tables
            ]
            return {"tables": keep}
        return self.answer({t: "keep_all" if t.lower() in used else "drop_all" for t in tables})

    def __call__(self, prompt: str) -> Reply:
        if "stopped at the length limit" in prompt:  # the retry after a cut-off reply
            return self.answer_sql(self.gold[self.question_in(prompt)])
        if "You are the Selector" in prompt:
            return self.selection(prompt)
        writes_sql = (
            "You are the Decomposer" in prompt
            or "You are the Refiner in a" in prompt
            or "You are the SQL writer" in prompt
            or "query that answers the question below" in prompt  # SQLFixAgent's SQLTool
        )
        if writes_sql:
            gold = self.gold[self.question_in(prompt)]
            if self.cut_off:
                half = f"Sub question 1: ...\nSQL\n```sql\n{gold[: len(gold) // 2]}"
                return ScriptedReply(half, finish_reason="length")
            return self.answer_sql(gold)
        if "You are a database administrator" in prompt:
            verdict = "error" if self.question_in(prompt) in self.flagged else "pass"
            return self.answer(
                {"explanation": "clause by clause", "verdict": verdict, "reason": "checked"}
            )
        if "Reword a user's question" in prompt:
            q = self.question_in(prompt)
            return self.answer({"paraphrases": [f"Put differently: {q}", f"Again: {q}"]})
        if "You are the SQLRefiner" in prompt:
            return self.answer({"explanation": "candidate 1 answers it", "choice": 1, "sql": ""})
        if "Choose 3 reviewers" in prompt:
            return self.answer({"reviewers": ["SQL engineer", "domain analyst", "QA engineer"]})
        if "that a colleague wrote for a user's question" in prompt:
            return "The query answers the question."
        self.unknown.append(prompt[:120])
        raise LookupError(f"unexpected prompt: {prompt[:120]!r}")


def _eval(
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    responder: LayoutResponder,
    pipeline: str = "macsql",
    *options: str,
    reject_structured: bool = False,
) -> dict[str, Any]:
    out = tmp_path / pipeline
    with ScriptedOpenAIServer(responder, reject_structured=reject_structured) as server:
        code = main(
            spider_eval_args(
                out,
                "--pipeline",
                pipeline,
                "--model",
                "openai:scripted",
                "--base-url",
                server.base_url,
                "--api-key",
                "test-key",
                *options,
                data_dir=data_dir,
            )
        )
        requests, bodies = server.requests, list(server.bodies)
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert responder.unknown == []
    summary = json.loads((out / "summary.json").read_text())
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == len(ITEMS)
    assert summary["ex"] == 100.0, [r for r in results if not r["correct"]]
    not_ok = [r for r in results if r["status"] != "ok" or r["error"] is not None]
    assert not_ok == [], [(r["db_id"], r["status"], r["error"]) for r in not_ok]
    calls = {agent: int(v["calls"]) for agent, v in summary["tokens_per_agent"].items()}
    assert sum(calls.values()) == requests  # every request, refused or not, counts in usage
    if pipeline == "macsql":  # the Selector runs on the wide databases
        wide = [r for r in results if r["db_id"] in WIDE]
        assert len(wide) == 6 and all(r["selector_used"] for r in wide)
    return {"calls": calls, "results": results, "bodies": bodies, "summary": summary}


def _fallbacks(run: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(r["db_id"], f) for r in run["results"] for f in r["fallbacks"]]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_macsql_reads_every_layout(
    layout: str, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _eval(data_dir, tmp_path, capsys, LayoutResponder(layout))
    # Right the first time: one Selector call per wide item, one Decomposer call per item,
    # no Refiner, and no fallback (the Selector's map was read and applied every time).
    assert run["calls"] == {"selector": 6, "decomposer": len(ITEMS)}
    assert _fallbacks(run) == []


@pytest.mark.parametrize("layout", ["bare", "json_sql_key", "think"])
@pytest.mark.parametrize("pipeline", ["sqlfix", "r3"])
def test_sqlfix_and_r3_read_every_layout(
    pipeline: str,
    layout: str,
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = _eval(data_dir, tmp_path, capsys, LayoutResponder(layout), pipeline)
    assert _fallbacks(run) == []
    if pipeline == "sqlfix":  # the reviewer's verdict was read: half the items were repaired
        assert run["calls"]["query_crafter"] == len(ITEMS[::2])
        assert run["calls"]["sql_refiner"] >= len(ITEMS[::2])
    else:  # personas read (no default), consensus in round 1
        assert run["calls"] == {"writer": 16, "persona": 8, "reviewer": 24}


def test_a_fine_tuned_sql_generator_answering_bare_sql(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SQLFixAgent's SQLTool as a fine-tuned text-to-SQL model (its own prompt, bare SQL).
    responder = LayoutResponder("bare")
    options = ("--set", "sql_generator=openai:scripted")
    run = _eval(data_dir, tmp_path, capsys, responder, "sqlfix", *options)
    assert _fallbacks(run) == []
    assert run["calls"]["sql_tool"] >= len(ITEMS) and "decomposer" not in run["calls"]


def test_reasoning_drafts_never_become_the_prediction(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for layout in ("think", "reasoning_content"):
        run = _eval(data_dir, tmp_path / layout, capsys, LayoutResponder(layout))
        assert all("draft" not in r["prediction"] for r in run["results"])
    # The reasoning server's thinking tokens are counted apart in the run's usage.
    assert run["summary"]["tokens_per_agent"]["decomposer"]["reasoning_tokens"] > 0


def test_cut_off_replies_are_asked_once_more(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _eval(data_dir, tmp_path, capsys, LayoutResponder("papers", cut_off=True))
    # Each Decomposer reply was cut off mid-query and asked once more: two calls an item.
    assert run["calls"] == {"selector": 6, "decomposer": 2 * len(ITEMS)}
    for result in run["results"]:
        assert [f["kind"] for f in result["fallbacks"]] == ["cut_off"], result
        assert result["usage"]["decomposer"]["calls"] == 2
    assert run["summary"]["fallbacks"] == {"decomposer: cut_off": len(ITEMS)}
    # Every request carried the output-token limit.
    assert all(
        body.get("max_tokens") or body.get("max_completion_tokens") for body in run["bodies"]
    )


@pytest.mark.parametrize("pipeline", ["macsql", "sqlfix", "r3"])
def test_structured_output_where_the_server_supports_it(
    pipeline: str, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responder = LayoutResponder("papers", structured=True)
    run = _eval(data_dir, tmp_path, capsys, responder, pipeline, "--set", "reply_format=structured")
    assert _fallbacks(run) == []
    asked = [b for b in run["bodies"] if b.get("response_format") or b.get("tools")]
    # Every agent but R^3's free-text reviewers asked in a schema.
    reviewers = run["calls"].get("reviewer", 0) if pipeline == "r3" else 0
    assert len(asked) == len(run["bodies"]) - reviewers


def test_structured_output_falls_back_to_text_once_when_the_server_rejects_it(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The model answers in the schema's shape as JSON text; the server refuses every schema.
    responder = LayoutResponder("papers", structured=True)
    run = _eval(
        data_dir,
        tmp_path,
        capsys,
        responder,
        "macsql",
        "--set",
        "reply_format=structured",
        "--concurrency",
        "1",
        reject_structured=True,
    )
    refused = [b for b in run["bodies"] if b.get("response_format") or b.get("tools")]
    assert len(refused) == 1  # said once; text for the rest of the run
    notes = [f for r in run["results"] for f in r["fallbacks"]]
    assert [f["kind"] for f in notes] == ["structured_output"]
    assert "not supported" in notes[0]["detail"]


# --------------------------------------------------------------------------- issue 24 classes


def _json_tool_call(sql: str) -> str:
    call = {"name": "execute_sql", "arguments": {"query": sql}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


CLASSES: dict[str, list[Callable[[str], Reply]]] = {
    # SQL in a container without `;`: tags in any case, inline code, labels with prose after.
    "containers": [
        lambda sql: f"<sql>{sql}</sql>",
        lambda sql: f"Here it is:\n<SQL>\n{sql}\n</SQL>\nIt reads the needed tables.",
        lambda sql: f"<Query>{sql}</Query>",
        lambda sql: f"The query `{sql}` answers it.",
        lambda sql: f"Query: {sql} -- it reads the needed tables",
        lambda sql: f"Answer: {sql}, which answers the question.",
        lambda sql: f"SQL: {sql}\nThis returns what was asked.",
        lambda sql: f"<answer>\n{sql}\n</answer>",
    ],
    # Several candidates: the one marked final or given plainly, never the example, the draft
    # or the echoed DDL, whatever their position.
    "several_candidates": [
        lambda sql: f"```sql\n{sql}\n```\nFor example, you could also write:\n```sql\n{DRAFT}\n```",
        lambda sql: f"My first attempt:\n```sql\n{DRAFT}\n```\nFinal answer:\n{sql}",
        lambda sql: (
            f"Sub question 1: the rows\nSQL\n```sql\n{DRAFT}\n```\n"
            f"Sub question 2: the answer\nSQL: {sql}"
        ),
        lambda sql: f"```sql\n{sql}\n```\nThe table:\n```sql\nCREATE TABLE t (a INT)\n```",
        lambda sql: f"<answer>{sql}</answer>\nAlternatively:\n```sql\n{DRAFT}\n```",
    ],
    # Model-family markup: raw channel markers, full-width punctuation, JSON answers under other
    # keys, tool-call shaped text, and OpenAI tool calls when no tool was offered.
    "markup": [
        lambda sql: (
            f"<|channel|>analysis<|message|>Maybe {DRAFT}.<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{sql}<|return|>"
        ),
        lambda sql: f"查询如下：{sql}；这个查询返回结果。",
        lambda sql: json.dumps({"answer": sql}),
        lambda sql: json.dumps({"reasoning": f"not {DRAFT}", "final": sql}),
        _json_tool_call,
        lambda sql: ScriptedReply("", tool_calls=(("execute_sql", {"query": sql}),)),
    ],
}


def _wrapped(tables: list[str], used: set[str], columns: dict[str, list[str]]) -> Any:
    return {"tables": {t: "keep_all" if t.lower() in used else "drop_all" for t in tables}}


def _keep_drop_words(tables: list[str], used: set[str], columns: dict[str, list[str]]) -> Any:
    return {t.upper(): "keep" if t.lower() in used else "drop" for t in tables}


def _booleans(tables: list[str], used: set[str], columns: dict[str, list[str]]) -> Any:
    return {t: t.lower() in used for t in tables}


def _kept_list(tables: list[str], used: set[str], columns: dict[str, list[str]]) -> Any:
    return [t for t in tables if t.lower() in used]


def _dotted_columns(tables: list[str], used: set[str], columns: dict[str, list[str]]) -> Any:
    return {"columns": [f"{t}.{c}" for t in tables if t.lower() in used for c in columns[t]]}


SELECTION_SHAPES = [_wrapped, _keep_drop_words, _booleans, _kept_list, _dotted_columns]


class RotatingResponder(LayoutResponder):
    """Right answers whose layout depends on the item: item i of the dev slice answers in the
    class's layout i mod k, and its Selector in shape i mod 5. Records the tables each writer
    prompt's schema showed, to check that every shape of the Selector's answer was applied."""

    def __init__(self, layouts: list[Callable[[str], Reply]]) -> None:
        super().__init__("papers")
        self.layouts = layouts
        self.order = [item["question"] for item in _dev()]
        self.shown: dict[str, set[str]] = {}
        self.offered: dict[str, set[str]] = {}
        self.asked = ""

    def question_in(self, prompt: str) -> str:
        self.asked = super().question_in(prompt)
        return self.asked

    def answer_sql(self, sql: str) -> Reply:
        return self.layouts[self.order.index(self.asked) % len(self.layouts)](sql)

    def selection(self, prompt: str) -> Reply:
        gold = self.gold[self.question_in(prompt)]
        used = {t.name.lower() for t in sqlglot.parse_one(gold, read="sqlite").find_all(exp.Table)}
        schema = prompt.rsplit("<schema>", 1)[-1].split("</schema>", 1)[0]
        blocks = re.findall(r"^# Table: (\S+)\n\[\n(.*?)^\]", schema, re.M | re.S)
        columns = {t: re.findall(r"^\s*\((\S+?):", body, re.M) for t, body in blocks}
        tables = list(columns)
        self.offered[self.asked] = {t.lower() for t in tables}
        shape = SELECTION_SHAPES[self.order.index(self.asked) % len(SELECTION_SHAPES)]
        return f"```json\n{json.dumps(shape(tables, used, columns))}\n```"

    def __call__(self, prompt: str) -> Reply:
        if "You are the Decomposer" in prompt:
            schema = prompt.rsplit("<schema>", 1)[-1].split("</schema>", 1)[0]
            shown = {t.lower() for t in re.findall(r"^# Table: (\S+)", schema, re.M)}
            self.shown[self.question_in(prompt)] = shown
        return super().__call__(prompt)


@pytest.mark.parametrize("reply_class", sorted(CLASSES))
def test_every_class_of_layout_reaches_ex_100(
    reply_class: str, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responder = RotatingResponder(CLASSES[reply_class])
    run = _eval(data_dir, tmp_path, capsys, responder, "macsql", "--traces")
    # Right the first time, read without a doubt: no fallback, no Refiner.
    assert run["calls"] == {"selector": 6, "decomposer": len(ITEMS)}
    assert _fallbacks(run) == []
    # A query chosen among several says how, on its model call in the traces.
    traces = [json.loads(line) for line in (tmp_path / "macsql" / "traces.jsonl").open()]
    readings = [c["reply_reading"] for t in traces for c in t["calls"] if "reply_reading" in c]
    if reply_class == "several_candidates":
        assert len(readings) == len(ITEMS) and all(r["candidates"] == 2 for r in readings)
        assert all(r["passed_over"] and r["rule"] for r in readings)
    # Every shape of the Selector's answer was applied: the writer saw the used tables, and
    # fewer than all (a table whose stored values matched the question stays too).
    for item in _dev():
        if item["db_id"] in WIDE:
            gold = sqlglot.parse_one(item["query"], read="sqlite")
            used = {t.name.lower() for t in gold.find_all(exp.Table)}
            shown = responder.shown[item["question"]]
            assert used <= shown < responder.offered[item["question"]], item["question"]


@pytest.mark.parametrize("other_shape", [False, True], ids=["plain_text", "json_of_another_shape"])
def test_a_server_that_ignores_response_format_falls_back_and_the_eval_completes(
    other_shape: bool, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The request asks for a schema; the server answers as if it had not (free text, or JSON
    # under other keys): read as text, said once for the run, and the eval completes.
    class Ignoring(LayoutResponder):
        def answer_sql(self, sql: str) -> Reply:
            return json.dumps({"query": sql}) if other_shape else f"```sql\n{sql}\n```"

        def answer(self, obj: dict[str, Any]) -> Reply:
            return json.dumps(obj) if other_shape else f"Here:\n{json.dumps(obj)}"

    responder = Ignoring("papers")
    run = _eval(data_dir, tmp_path, capsys, responder, "macsql", "--set", "reply_format=structured")
    asked = [b for b in run["bodies"] if b.get("response_format") or b.get("tools")]
    assert len(asked) == len(run["bodies"])  # every request asked for a schema
    notes = [f for r in run["results"] for f in r["fallbacks"]]
    assert [f["kind"] for f in notes] == ["structured_output"]  # once for the run
    assert "reply_format=text" in notes[0]["detail"]  # the setting to change
