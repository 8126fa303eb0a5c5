"""The live server the tests that need one use: FILE_STORAGE_BASE_URL and an elevated FILE_STORAGE_API_KEY."""

import os
import unittest

BASE_URL = os.environ.get("FILE_STORAGE_BASE_URL")
API_KEY = os.environ.get("FILE_STORAGE_API_KEY")

needs_server = unittest.skipUnless(BASE_URL and API_KEY, "needs a live server: set FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY (npm test does)")


def events_route_missing() -> bool:
    """True when the server has no event feed yet (GET /v1/events answers 404)."""
    from file_storage import FileStorage, NotFoundError

    try:
        FileStorage(API_KEY or "", BASE_URL or "").events.list(limit=1)
    except NotFoundError:
        return True
    return False
