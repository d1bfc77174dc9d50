"""What an API key may reach inside its organisation.

By default an agent's key reaches its whole organisation: agents of one organisation share
what they remember, and any of them may read, change and delete any memory of it. A key may
be issued narrower (ApiKey.namespaces, ApiKey.read_only):

- limited to namespace prefixes, it reads, finds, writes and changes only memories whose
  namespace lies under one of them; anything else is missing to it (404, as another
  organisation's memory is), and a write elsewhere is refused (403);
- read-only, it may read and search (searches are POSTs), never write.

Each door (the REST API today) asks its key's reach before it calls a service or a selector;
row-level security still keeps organisations apart underneath.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from memories.errors import OutOfReach


def scope_prefix_filter(prefix: str, path: str = "") -> Q:
    """`users/alice` matches the namespace users/alice and everything under users/alice/, not
    users/alice2. path: the memory's, from the model filtered (e.g. "source__")."""
    prefix = prefix.strip("/")
    return Q(**{f"{path}scope": prefix}) | Q(**{f"{path}scope__startswith": prefix + "/"})


@dataclass(frozen=True)
class KeyReach:
    namespaces: tuple[str, ...] = ()  # prefixes; none: the whole organisation
    read_only: bool = False

    @classmethod
    def of(cls, api_key) -> KeyReach:
        return cls(tuple(api_key.namespaces or ()), api_key.read_only)

    @property
    def limited(self) -> bool:
        return bool(self.namespaces)

    def covers(self, scope: str) -> bool:
        return not self.namespaces or any(scope == p or scope.startswith(p + "/") for p in self.namespaces)

    def memories(self, path: str = "") -> Q:
        """The memories in reach, as a filter (everything when unlimited)."""
        reach = Q()
        for prefix in self.namespaces:
            reach |= scope_prefix_filter(prefix, path)
        return reach

    def check_write(self, scope: str, *, field: str = "namespace") -> None:
        if self.read_only:
            raise OutOfReach("this API key is read-only")
        if not self.covers(scope):
            shown = "/".join(scope.split("/")[:1]) + "/…" if "/" in scope else (scope or "(no namespace)")
            raise OutOfReach(f"this API key may only write under {', '.join(self.namespaces)}, not {shown}",
                             field=field)


EVERYWHERE = KeyReach()
