"""The API's doors that name a memory (or what hangs from one, a retrieval event, or an
entity) by id, for the tests that try them all with a caller who must not get through: another
organisation's key (test_cross_tenant), a key limited to other namespaces (test_key_reach).

Placeholders: {memory} the target memory, {other} a second memory beside it, {tag} one of the
target's tags, {relationship} one of its relationships, {event} a retrieval event, {entity} an
entity in the target memory's namespace, {session} a session in it."""

MEMORY_DOORS = [
    ("get", "/api/v1/memories/{memory}", None),
    ("patch", "/api/v1/memories/{memory}", {"content": "taken over", "version": 1}),
    ("delete", "/api/v1/memories/{memory}", None),
    ("post", "/api/v1/memories/{memory}/restore", {}),
    ("post", "/api/v1/memories/{memory}/confirm", {}),
    ("post", "/api/v1/memories/{memory}/supersede", {"content": "taken over"}),
    ("post", "/api/v1/memories/{memory}/correct", {"content": "taken over"}),
    ("post", "/api/v1/memories/{memory}/feedback", {"useful": False}),
    ("get", "/api/v1/memories/{memory}/history", None),
    ("get", "/api/v1/memories/{memory}/explain", None),
    ("get", "/api/v1/memories/{memory}/tags", None),
    ("post", "/api/v1/memories/{memory}/tags", {"tags": ["mine"]}),
    ("delete", "/api/v1/memories/{memory}/tags/{tag}", None),
    ("get", "/api/v1/memories/{memory}/relationships", None),
    ("post", "/api/v1/memories/{memory}/relationships", {"target_id": "{other}", "relation_type": "supports"}),
    ("delete", "/api/v1/relationships/{relationship}", None),
]
ENTITY_DOORS = [
    ("get", "/api/v1/entities/{entity}", None),
]
SESSION_DOORS = [
    ("get", "/api/v1/sessions/{session}", None),
    ("get", "/api/v1/sessions/{session}/memories", None),
    ("post", "/api/v1/sessions/{session}/close", {}),
]
EVENT_DOORS = [
    ("get", "/api/v1/retrieval-events/{event}", None),
    ("post", "/api/v1/retrieval-events/{event}/replay", None),
]


def fill(value, ids: dict):
    """A door's path or body with the placeholders replaced."""
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    return value


def door_ids(doors) -> list[str]:
    return [f"{method} {path}" for method, path, _ in doors]
