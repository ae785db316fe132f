"""Keeping evaluation data out of fine-tuning data.

A model tuned on Spider dev's or BIRD dev's databases or questions has seen the test; its
scores there mean nothing. Spider and BIRD keep their training and evaluation databases
disjoint, so the guard works by database first, then by question:

- the run's items must come from a training split (Spider ``train_spider.json``, BIRD train,
  SParC ``train.json``, CoSQL ``cosql_train.json``); a run over an evaluation split is refused
  whole;
- a sample whose item is about an evaluation database is dropped (and counted);
- a sample whose item's question is an evaluation question (compared on word tokens: case,
  punctuation and spacing aside) is dropped, and so is one whose prompt has a line that is an
  evaluation question once its label (``[Question]``, ``Question:``) is set aside: a
  demonstration taken from an evaluation set. Whole questions, never substrings: the train
  question "How many courses are there in total?" does not quote the dev question "How many
  courses are there?".

Where the evaluation sets are: the dev, test and mini-dev files beside the run's question file;
for BIRD, whose official release puts train and dev in separate folders, also any sibling
folder in BIRD's evaluation layout (``dev.json`` with ``dev_tables.json`` or ``dev_databases/``,
or the mini-dev files); and every ``--eval-set`` (a question file or such a folder). Question
files in Spider's, BIRD's and SParC/CoSQL's layouts are read; tables files and database folders
give databases only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRAINING_SPLITS = frozenset({"train", "train_others"})
"""Splits whose questions may become fine-tuning data (Spider train_spider.json and
train_others.json, BIRD train)."""

_QUESTION_FILES = ("dev.json", "test.json", "mini_dev_sqlite.json", "mini_dev_mysql.json",
                   "mini_dev_postgresql.json", "cosql_dev.json")  # fmt: skip
# Only BIRD's dev tables and databases name evaluation databases alone: Spider's test release
# puts every database, train ones included, in test_tables.json and test_database/.
_TABLES_FILES = ("dev_tables.json",)
_DATABASE_FOLDERS = ("dev_databases",)
_MIN_WORDS = 3  # shorter "questions" are not quotes anyone could recognise
_WORD = re.compile(r"\w+")
# A line's label before the question: "[Question]", "Question:", "Q1:", "- ".
_LABEL = re.compile(r"^\s*(?:[-*]\s+)?(?:\[[^\]\n]{1,40}\]|[A-Za-z][\w ]{0,30}:)\s*")


class EvaluationDataError(ValueError):
    """The data would put evaluation items into a training set."""


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def normalise_question(text: str) -> str:
    """A question as the guard compares it: its words, lower case, one space apart."""
    return " ".join(words(text))


def _is_bird_evaluation_folder(folder: Path) -> bool:
    if any((folder / name).is_file() for name in _QUESTION_FILES[2:]):
        return True
    return (folder / "dev.json").is_file() and (
        (folder / "dev_tables.json").is_file() or (folder / "dev_databases").is_dir()
    )


def evaluation_files_in(path: Path) -> list[Path]:
    """The evaluation files a path names: a file itself, or the known files of a folder
    (question files, tables files, database folders)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise EvaluationDataError(f"no such evaluation set: {path}")
    names = (*_QUESTION_FILES, *_TABLES_FILES, *_DATABASE_FOLDERS)
    return [path / name for name in names if (path / name).exists()]


def find_evaluation_files(dataset: str, data_dir: Path) -> list[Path]:
    """The evaluation files found from a run's data folder (see the module's docstring)."""
    found = [data_dir / n for n in (*_QUESTION_FILES, *_TABLES_FILES) if (data_dir / n).is_file()]
    found += [data_dir / n for n in _DATABASE_FOLDERS if (data_dir / n).is_dir()]
    if dataset == "bird" and data_dir.parent.is_dir():
        for sibling in sorted(data_dir.parent.iterdir()):
            other = sibling.is_dir() and sibling.resolve() != data_dir.resolve()
            if other and _is_bird_evaluation_folder(sibling):
                found += evaluation_files_in(sibling)
    return found


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvaluationDataError(f"cannot read the evaluation set {path}: {exc}") from None


def _records_of(path: Path) -> tuple[list[str], set[str]]:
    """(questions, databases) of a question or tables file."""
    records = _read_json(path)
    if not isinstance(records, list):
        raise EvaluationDataError(f"{path} is not a question or tables file (a JSON list)")
    questions: list[str] = []
    databases: set[str] = set()
    for rec in records:
        if not isinstance(rec, dict):
            continue
        db = rec.get("db_id") or rec.get("database_id")
        if db:
            databases.add(str(db))
        if rec.get("question"):
            questions.append(str(rec["question"]))
        for turn in rec.get("interaction") or []:  # SParC, CoSQL
            if isinstance(turn, dict) and turn.get("utterance"):
                questions.append(str(turn["utterance"]))
        final = rec.get("final")
        if isinstance(final, dict) and final.get("utterance"):
            questions.append(str(final["utterance"]))
    return questions, databases


@dataclass
class EvaluationSets:
    """The evaluation databases and questions a training export must not contain."""

    sources: list[str] = field(default_factory=list)
    databases: set[str] = field(default_factory=set)
    questions: dict[str, str] = field(default_factory=dict)
    """Normalised question -> the file it came from."""

    @classmethod
    def load(cls, paths: Iterable[Path]) -> EvaluationSets:
        sets = cls()
        for path in paths:
            if path.is_dir():  # a database folder: one sub-folder per database
                sets.databases |= {p.name for p in path.iterdir() if p.is_dir()}
            else:
                questions, databases = _records_of(path)
                sets.databases |= databases
                for question in questions:
                    key = normalise_question(question)
                    if len(key.split()) >= _MIN_WORDS:
                        sets.questions.setdefault(key, str(path))
            sets.sources.append(str(path))
        return sets

    def has_question(self, question: str) -> bool:
        return normalise_question(question) in self.questions

    def quoted_question(self, texts: Sequence[str]) -> str | None:
        """The first line of `texts` that is an evaluation question, label aside."""
        if not self.questions:
            return None
        for text in texts:
            for line in text.splitlines():
                key = normalise_question(_LABEL.sub("", line, count=1))
                if key in self.questions:
                    return line.strip()
        return None


def check_training_split(dataset: str, split: str) -> None:
    if split not in TRAINING_SPLITS:
        raise EvaluationDataError(
            f"the run is over {dataset} {split}, an evaluation set; fine-tuning data must come "
            "from training data: run the teacher with --split train (Spider train_spider.json, "
            "BIRD train)"
        )
