"""A conversation written through the API as a live one is: one turn a write, in order."""


def store(api, namespace: str, contents: list[str]) -> list[str]:
    """One write each, in order (embedded as they are written); the memories' ids."""
    ids = []
    for content in contents:
        response = api.post("/api/v1/memories", {"content": content, "namespace": namespace.split("/")})
        assert response.status_code == 201, response.content
        ids.append(response.json()["memory"]["id"])
    return ids
