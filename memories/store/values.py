"""What a store item's value means to the rest of the platform (docs/adr/0040).

A store item (LangGraph's Item, spec §3's entry) is a memory addressed by namespace and key
whose value, a JSON object, is kept as the memory's metadata. Two things are read from it:

* the text it is found by: the text of its indexed fields (LangGraph's field paths, "$" for
  the whole value), which becomes the memory's content, embedded and matched by full text;
* the filters a search applies to it (`{"score": {"$gte": 3}, "kind": "note"}`), as SQL
  conditions over the JSONB column, so PostgreSQL applies them inside the tenant's rows.

Pure functions: no database, no model. The path syntax and the text each path yields are
LangGraph's own (langgraph.store.base.embed: tokenize_path, get_text_at_path), checked against
it by tests/unit/test_store_values.py.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from memories.errors import InvalidInput

WHOLE_VALUE = "$"
DEFAULT_INDEX = (WHOLE_VALUE,)  # LangGraph's default `fields`: the value's JSON text
INDEX_PATHS_MAX = 32
PATH_MAX_CHARS = 256
FILTER_CONDITIONS_MAX = 32
# Between two texts of one item (two fields, or the elements of a `[*]`), embedded as one.
TEXT_SEPARATOR = "\n"


def value_json(value: Any) -> str:
    """A value as LangGraph serialises it for embedding: keys sorted, Unicode kept."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------- field paths


def tokenize_path(path: str) -> list[str]:
    """A field path's parts: "a.b[0].c" -> ["a", "b", "[0]", "c"]; "[*]", "[-1]" and
    "{x,y.z}" (several fields) stay whole."""
    tokens: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(path):
        char = path[i]
        if char in "[{":
            if current:
                tokens.append("".join(current))
                current = []
            opening, closing = char, "]" if char == "[" else "}"
            depth, part = 1, [char]
            i += 1
            while i < len(path) and depth > 0:
                if path[i] == opening:
                    depth += 1
                elif path[i] == closing:
                    depth -= 1
                part.append(path[i])
                i += 1
            tokens.append("".join(part))
            continue
        if char == ".":
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(char)
        i += 1
    if current:
        tokens.append("".join(current))
    return tokens


def _leaf_text(value: Any) -> list[str]:
    if isinstance(value, (str, int, float, bool)):  # bool is an int: str(True) == "True", as LangGraph
        return [str(value)]
    if isinstance(value, (list, dict)):
        return [value_json(value)]
    return []  # null


def texts_at_path(value: Any, path: str) -> list[str]:
    """The texts a field path selects in a value, as LangGraph's get_text_at_path returns them:
    strings and numbers as text, objects and lists as JSON, nothing for a missing field."""
    if not path or path == WHOLE_VALUE:
        return [value_json(value)]
    tokens = tokenize_path(path)

    def walk(node: Any, position: int) -> list[str]:
        if position >= len(tokens):
            return _leaf_text(node)
        token = tokens[position]
        if token.startswith("[") and token.endswith("]"):
            if not isinstance(node, list):
                return []
            index = token[1:-1]
            if index == "*":
                return [text for element in node for text in walk(element, position + 1)]
            try:
                number = int(index)
            except ValueError:
                return []
            number = len(node) + number if number < 0 else number
            return walk(node[number], position + 1) if 0 <= number < len(node) else []
        if token.startswith("{") and token.endswith("}"):
            if not isinstance(node, dict):
                return []
            texts = []
            for field in (part.strip() for part in token[1:-1].split(",")):
                found, current = True, node
                for part in tokenize_path(field):
                    if isinstance(current, dict) and part in current:
                        current = current[part]
                    else:
                        found = False
                        break
                if found and tokenize_path(field) and current is not None:
                    texts.extend(_leaf_text(current))
            return texts
        if token == "*":
            children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
            return [text for child in children for text in walk(child, position + 1)]
        if isinstance(node, dict) and token in node:
            return walk(node[token], position + 1)
        return []

    return walk(value, 0)


def check_index(index: Any) -> tuple[str, ...] | None:
    """A put's `index`: None (the default, the whole value), False (not indexed) or a list of
    field paths. Returns the paths to index, or None for an item kept out of search by meaning."""
    if index is None:
        return DEFAULT_INDEX
    if index is False:
        return None
    if not isinstance(index, list) or not all(isinstance(path, str) for path in index):
        raise InvalidInput("index must be false, null or a list of field paths", field="index")
    if len(index) > INDEX_PATHS_MAX:
        raise InvalidInput(f"index names at most {INDEX_PATHS_MAX} field paths", field="index")
    for path in index:
        if not path.strip() or len(path) > PATH_MAX_CHARS:
            raise InvalidInput(f"a field path is 1 to {PATH_MAX_CHARS} characters", field="index")
    return tuple(index)


@dataclass(frozen=True)
class ItemText:
    """What a store item is found by: `content` (never empty), and whether it is embedded."""

    content: str
    indexed: bool


def item_text(value: dict, paths: tuple[str, ...] | None, limit: int) -> ItemText:
    """The memory content a value is stored with. Indexed, it is the text of its indexed fields
    (LangGraph embeds each field apart and scores an item by its best one; here they are one
    text, one vector), cut at `limit` characters (the model reads far fewer). Not indexed, or
    when its fields hold no text, it is the value's JSON, not embedded: still what the console
    shows and what full text matches."""
    if paths is not None:
        texts = [text for path in paths for text in texts_at_path(value, path) if text.strip()]
        if texts:
            return ItemText(TEXT_SEPARATOR.join(texts)[:limit], indexed=True)
    return ItemText(value_json(value)[:limit], indexed=False)


# --------------------------------------------------------------------------- filters over a value

OPERATORS = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
RANGE_OPERATORS = ("$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True)
class Condition:
    """One comparison of a top-level field of the value: field, operator ($eq...), operand."""

    field: str
    operator: str
    operand: Any


def _is_number(operand: Any) -> bool:
    return isinstance(operand, (int, float)) and not isinstance(operand, bool) and math.isfinite(operand)


def filter_conditions(value_filter: Any) -> list[Condition]:
    """A search's `filter` as conditions, each checked: {"field": operand} is equality (JSON
    equality: an object or a list equals only an equal one), {"field": {"$op": operand, ...}}
    compares with each operator; $gt, $gte, $lt and $lte compare numbers with numbers and
    strings with strings (by code point), and a field of another type never matches them."""
    if value_filter is None:
        return []
    if not isinstance(value_filter, dict):
        raise InvalidInput("filter must be an object of field: value", field="filter")
    conditions = []
    for field, wanted in value_filter.items():
        where = f"filter.{field}"
        if not field:
            raise InvalidInput("a filter's field names must not be empty", field="filter")
        operators = [name for name in wanted if name.startswith("$")] if isinstance(wanted, dict) else []
        if not operators:
            conditions.append(Condition(field, "$eq", wanted))
            continue
        if len(operators) != len(wanted):
            raise InvalidInput("a filter's field takes operators ($eq, $gt...) or a value, not both", field=where)
        for operator, operand in wanted.items():
            if operator not in OPERATORS:
                raise InvalidInput(f"unsupported operator {operator}: use one of {', '.join(OPERATORS)}",
                                   field=where)
            if operator in RANGE_OPERATORS and not (_is_number(operand) or isinstance(operand, str)):
                raise InvalidInput(f"{operator} compares a number or a string", field=where)
            conditions.append(Condition(field, operator, operand))
    if len(conditions) > FILTER_CONDITIONS_MAX:
        raise InvalidInput(f"a filter holds at most {FILTER_CONDITIONS_MAX} conditions", field="filter")
    return conditions


def filter_sql(conditions: list[Condition], column: str) -> tuple[str, list]:
    """The conditions as one SQL condition over the JSONB `column`, and its parameters.
    Equality compares JSON (1 equals 1.0), an absent field reading as null, as LangGraph's
    in-memory store reads it (so $ne matches an item without the field). Ranges check the
    field's JSON type before comparing, so "10" is never compared with 9."""
    parts, params = [], []
    for condition in conditions:
        field = f"({column} -> %s)"
        if condition.operator in ("$eq", "$ne"):
            parts.append(f"coalesce({field}, 'null'::jsonb) {OPERATORS[condition.operator]} %s::jsonb")
            params += [condition.field, json.dumps(condition.operand)]
        elif isinstance(condition.operand, str):
            parts.append(f"(jsonb_typeof({field}) = 'string' AND ({column} ->> %s) COLLATE \"C\" "
                         f"{OPERATORS[condition.operator]} %s)")
            params += [condition.field, condition.field, condition.operand]
        else:
            parts.append(f"(jsonb_typeof({field}) = 'number' AND {field} {OPERATORS[condition.operator]} %s::jsonb)")
            params += [condition.field, condition.field, json.dumps(condition.operand)]
    return " AND ".join(parts) or "true", params
