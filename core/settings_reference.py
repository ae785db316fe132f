"""The settings (`Context` fields) as a reference: name, type, default, description and the
pipelines that read each. `macsql ask --set help` prints it and the documentation's settings
page is generated from it, so neither can drift from the code."""

from __future__ import annotations

import typing
from dataclasses import MISSING, dataclass, fields

from macsql.core.context import (
    BaseContext,
    Context,
    MacSqlContext,
    R3Context,
    SqlFixContext,
)

# Each pipeline's own Context class; `macsql+sqlfix` reads the union of the first two.
_PIPELINE_CONTEXTS: dict[str, type[BaseContext]] = {
    "macsql": MacSqlContext,
    "sqlfix": SqlFixContext,
    "r3": R3Context,
}


@dataclass(frozen=True)
class SettingField:
    name: str
    type: str
    default: object
    description: str
    pipelines: tuple[str, ...]
    """The pipelines that read it; every pipeline when it is a `BaseContext` field."""
    minimum: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def default_text(self) -> str:
        if self.default is None or self.default == ():
            return "empty"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return repr(self.default) if isinstance(self.default, str) else f"{self.default:,}"


def _type_text(hint: object) -> str:
    """A reader's name for a field's type: `int`, `str or empty`, `list of str`, one of ..."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is tuple:
        return "comma-separated list"
    if type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return f"{_type_text(inner)} or empty"
    return getattr(hint, "__name__", str(hint))


def context_fields() -> list[SettingField]:
    """Every `Context` field: the shared settings first, then each pipeline's, each group in
    declaration order."""
    hints = typing.get_type_hints(Context)
    shared = BaseContext.field_names()
    out = []
    for f in fields(Context):
        if f.name in shared:
            pipelines: tuple[str, ...] = ("all",)
        else:
            pipelines = tuple(
                name for name, cls in _PIPELINE_CONTEXTS.items() if f.name in cls.field_names()
            )
        default = f.default
        if default is MISSING and callable(f.default_factory):
            default = f.default_factory()
        minimum = f.metadata.get("ge")
        out.append(
            SettingField(
                name=f.name,
                type=_type_text(hints[f.name]),
                default=default,
                description=str(f.metadata.get("description", "")),
                pipelines=pipelines,
                minimum=float(minimum) if isinstance(minimum, int | float) else None,
                choices=tuple(f.metadata.get("enum", ())),
            )
        )
    groups = ["all", *_PIPELINE_CONTEXTS]
    return sorted(out, key=lambda field: groups.index(field.pipelines[0]))


def settings_by_pipeline() -> dict[str, list[SettingField]]:
    """The fields grouped as `context_fields` orders them: 'all' first, then by pipeline (a
    field several pipelines read is listed under the first)."""
    grouped: dict[str, list[SettingField]] = {}
    for field in context_fields():
        grouped.setdefault(field.pipelines[0], []).append(field)
    return grouped


def closest_setting(name: str) -> str | None:
    """The Context field nearest to `name` in edit distance, when near enough to be a typo
    (at most a third of the longer name's letters differ, or two)."""
    from rapidfuzz.distance import Levenshtein

    names = sorted(Context.field_names())
    best = min(names, key=lambda field: Levenshtein.distance(name, field))
    limit = max(2, max(len(name), len(best)) // 3)
    return best if Levenshtein.distance(name, best) <= limit else None


def unknown_settings_message(names: list[str]) -> str:
    """`no setting named 'x'; did you mean 'y'?` for each unknown name."""
    parts = []
    for name in names:
        guess = closest_setting(name)
        parts.append(f"no setting named {name!r}" + (f"; did you mean {guess!r}?" if guess else ""))
    return ", ".join(parts)
