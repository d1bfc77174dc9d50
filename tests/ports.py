"""Ports on this machine for the tests' own servers, and for servers that are not there."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (bound, then let go): for a server a test starts, or as
    the address of a server that is out of reach."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
