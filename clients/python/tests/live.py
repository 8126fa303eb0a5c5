"""The live server the tests that need one use: FILE_STORAGE_BASE_URL and an elevated FILE_STORAGE_API_KEY."""

import os
import unittest

BASE_URL = os.environ.get("FILE_STORAGE_BASE_URL")
API_KEY = os.environ.get("FILE_STORAGE_API_KEY")

needs_server = unittest.skipUnless(BASE_URL and API_KEY, "needs a live server: set FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY (npm test does)")

