"""What can go wrong in a memory service, in the product's words. The API maps each to an
HTTP status (memories/api/errors.py); services know nothing of HTTP."""


class MemoryServiceError(Exception):
    code = "error"

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(MemoryServiceError):
    code = "not_found"


class InvalidInput(MemoryServiceError):
    code = "invalid"


class Conflict(MemoryServiceError):
    """The change contradicts the current state: a duplicate, a deleted memory, a taken key."""

    code = "conflict"

    def __init__(self, message: str, *, code: str = "conflict", field: str | None = None, existing_id=None):
        super().__init__(message, field=field)
        self.code = code
        self.existing_id = existing_id


class StaleVersion(MemoryServiceError):
    """The caller's If-Match (or version) is not the memory's current version."""

    code = "version_mismatch"

    def __init__(self, message: str, *, current_version: int):
        super().__init__(message)
        self.current_version = current_version


class VersionRequired(MemoryServiceError):
    code = "version_required"


class OutOfReach(MemoryServiceError):
    """A write the caller's API key may not make: it is read-only, or limited to other
    namespaces (memories.access). A read out of reach is a NotFound instead."""

    code = "out_of_reach"
