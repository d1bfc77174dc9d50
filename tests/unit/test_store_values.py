"""A store item's value, read without a database (memories.store.values): the text of its indexed
fields, checked against LangGraph's own path reader, and the filters over it as SQL."""

import pytest
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from memories.store import values as store_values
from memories.errors import InvalidInput

DOCUMENT = {
    "title": "Trip notes", "year": 2023, "rating": 4.5, "draft": False, "missing": None,
    "metadata": {"author": {"name": "Ana"}, "tags": ["travel", "food"]},
    "chapters": [{"title": "Lisbon", "paragraphs": [{"text": "Pastel de nata"}, {"text": "Tram 28"}]},
                 {"title": "Porto", "paragraphs": [{"text": "Francesinha"}]}],
    "ünïcode": "café ☕",
}
PATHS = ["$", "title", "year", "rating", "draft", "missing", "absent", "metadata", "metadata.author.name",
         "metadata.tags", "metadata.tags[*]", "metadata.tags[0]", "metadata.tags[-1]", "metadata.tags[5]",
         "chapters[*].title", "chapters[*].paragraphs[*].text", "chapters[-1].paragraphs[0].text", "chapters[x]",
         "title[0]", "*", "metadata.*", "{title,year}", "{title,metadata.author.name,absent}", "chapters[0].{title}",
         "ünïcode", "metadata.author"]


@pytest.mark.parametrize("path", PATHS)
def test_each_path_yields_the_texts_langgraph_embeds(path):
    assert store_values.texts_at_path(DOCUMENT, path) == get_text_at_path(DOCUMENT, path)
    if path != "$":
        assert store_values.tokenize_path(path) == tokenize_path(path)


def test_an_item_is_found_by_the_text_of_its_indexed_fields_or_kept_out():
    whole = store_values.item_text({"b": 1, "a": "é"}, store_values.check_index(None), 8192)
    assert whole == store_values.ItemText('{"a": "é", "b": 1}', indexed=True)  # LangGraph's "$": sorted, Unicode kept
    fields = store_values.item_text(DOCUMENT, store_values.check_index(["title", "chapters[*].title"]), 8192)
    assert fields == store_values.ItemText("Trip notes\nLisbon\nPorto", indexed=True)
    for index in (False, ["absent", "missing"]):  # not indexed, or nothing to index: the JSON, not embedded
        kept = store_values.item_text({"note": "x"}, store_values.check_index(index), 8192)
        assert kept == store_values.ItemText('{"note": "x"}', indexed=False)
    assert len(store_values.item_text({"text": "x" * 10_000}, ("text",), 8192).content) == 8192


@pytest.mark.parametrize("index", [True, "title", [1], ["title", ""], ["x" * 300], ["p"] * 40])
def test_an_index_that_is_neither_false_null_nor_field_paths_is_refused(index):
    with pytest.raises(InvalidInput) as refused:
        store_values.check_index(index)
    assert refused.value.field == "index"


def test_a_filter_becomes_conditions_over_the_json_column():
    conditions = store_values.filter_conditions({"kind": "note", "score": {"$gte": 3, "$lt": 9.5},
                                                 "who": {"$ne": "bot"}, "author": {"name": "Ana"}})
    assert conditions == [
        store_values.Condition("kind", "$eq", "note"), store_values.Condition("score", "$gte", 3),
        store_values.Condition("score", "$lt", 9.5), store_values.Condition("who", "$ne", "bot"),
        store_values.Condition("author", "$eq", {"name": "Ana"}),
    ]
    sql, params = store_values.filter_sql(conditions, "m.metadata")
    assert sql.count("%s") == len(params)
    assert sql.startswith("coalesce((m.metadata -> %s), 'null'::jsonb) = %s::jsonb AND "
                          "(jsonb_typeof((m.metadata -> %s)) = 'number'")
    assert "'null'::jsonb) <> %s::jsonb" in sql and params[:2] == ["kind", '"note"']
    assert store_values.filter_sql([], "m.metadata") == ("true", [])


@pytest.mark.parametrize(("bad", "field"), [
    ("kind=note", "filter"), ({"": 1}, "filter"), ({"score": {"$in": [1, 2]}}, "filter.score"),
    ({"score": {"$gt": True}}, "filter.score"), ({"score": {"$lt": None}}, "filter.score"),
    ({"score": {"$gte": [1]}}, "filter.score"), ({"score": {"$gt": 1, "plain": 2}}, "filter.score"),
    ({f"f{i}": i for i in range(40)}, "filter"),
])
def test_a_filter_the_store_cannot_apply_is_refused_naming_the_field(bad, field):
    with pytest.raises(InvalidInput) as refused:
        store_values.filter_conditions(bad)
    assert refused.value.field == field
