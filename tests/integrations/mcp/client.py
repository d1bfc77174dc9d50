"""The official MCP client (the `mcp` package) over Streamable HTTP, with an API key."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def mcp_client(url: str, key: str | None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def data_of(result):
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))
