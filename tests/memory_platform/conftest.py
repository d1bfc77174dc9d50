# The product's ASGI app served by uvicorn in a thread (tests/memory_platform/test_serving.py).
from tests.integrations.conftest import served  # noqa: F401
