"""The difference between two versions of a memory: its text word by word, its other fields
one by one. The template renders every piece as text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from difflib import SequenceMatcher

from memories.models import MemoryVersion


@dataclass
class Segment:
    kind: str  # "equal", "insert" or "delete"
    text: str


@dataclass
class FieldChange:
    name: str
    before: str
    after: str


@dataclass
class VersionDiff:
    older: MemoryVersion
    newer: MemoryVersion
    content: list[Segment]
    fields: list[FieldChange]

    @property
    def content_changed(self) -> bool:
        return any(segment.kind != "equal" for segment in self.content)


def _words(text: str) -> list[str]:
    return re.findall(r"\s+|[^\s]+", text)


def content_diff(before: str, after: str) -> list[Segment]:
    old, new = _words(before), _words(after)
    segments: list[Segment] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            segments.append(Segment("delete", "".join(old[i1:i2])))
        if tag in ("insert", "replace"):
            segments.append(Segment("insert", "".join(new[j1:j2])))
        if tag == "equal":
            segments.append(Segment("equal", "".join(old[i1:i2])))
    return segments


# Snapshot numbers are stored as written ("0.0" at creation, "0.000" once read back): compare
# them as numbers, so an unchanged value never shows as a change.
NUMERIC_FIELDS = ("confidence", "importance", "usefulness_score", "decay_rate")


def _text(name: str, value) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    if name in NUMERIC_FIELDS:
        try:
            return f"{Decimal(str(value)):.3f}"
        except InvalidOperation:
            pass
    return str(value)


def _fields(version: MemoryVersion) -> dict[str, str]:
    values = {"category": version.category, "confidence": version.confidence, "status": version.status,
              "metadata": version.metadata, **version.snapshot}
    return {name: _text(name, value) for name, value in values.items()}


def version_diff(first: MemoryVersion, second: MemoryVersion) -> VersionDiff:
    older, newer = sorted((first, second), key=lambda version: version.version_num)
    before, after = _fields(older), _fields(newer)
    changes = [FieldChange(name, before.get(name, ""), after.get(name, ""))
               for name in sorted(set(before) | set(after)) if before.get(name, "") != after.get(name, "")]
    return VersionDiff(older, newer, content_diff(older.content, newer.content), changes)
