"""Downloads whose connection is cut or stalls midway, through a local proxy in front of the live server."""

from __future__ import annotations

import io
import os
import tempfile
import unittest

from conformance.support import TestProxy
from file_storage import APIConnectionError, APITimeoutError, FileStorage

from .live import API_KEY, BASE_URL, needs_server

KiB = 1024


#: The request line of a download by signed link, as TestProxy matches it.
DOWNLOAD = r"^GET /v1/files/[^/]+/download\?"


@needs_server
class CutDownloads(unittest.TestCase):
    def setUp(self) -> None:
        self.content = os.urandom(300 * KiB)
        self.file_id = FileStorage(API_KEY or "", BASE_URL or "").files.upload(self.content, name="cut-download.bin")["id"]
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.directory = directory.name

    def proxy(self, *, stall: bool = False) -> TestProxy:
        """A proxy that ends every download's answer after 100 KiB: it closes the connection, or stalls."""
        proxy = TestProxy(BASE_URL or "")
        proxy.cut_answers(DOWNLOAD, 100 * KiB, stall=stall)
        self.addCleanup(proxy.close)
        return proxy

    def test_a_download_cut_off_midway_raises_and_leaves_no_partial_file(self) -> None:
        proxy = self.proxy()
        client = FileStorage(API_KEY or "", proxy.url)
        target = os.path.join(self.directory, "copy.bin")
        with self.assertRaises(APIConnectionError) as cut_off:
            client.files.download_to(self.file_id, target)
        self.assertEqual((cut_off.exception.code, proxy.answers_cut), ("connection_error", 1))
        self.assertFalse(os.path.exists(target))
        # As a stream, the same: the chunks that arrived, then the error instead of a quiet end.
        received = 0
        with self.assertRaises(APIConnectionError), client.files.download(self.file_id) as content:
            for chunk in content.iter_bytes():
                received += len(chunk)
        self.assertTrue(0 < received < len(self.content))
        with self.assertRaises(APIConnectionError), client.files.download(self.file_id) as content:
            content.read()
        # Without the proxy the whole file arrives.
        whole = io.BytesIO()
        self.assertEqual(FileStorage(API_KEY or "", BASE_URL or "").files.download_to(self.file_id, whole), len(self.content))
        self.assertEqual(whole.getvalue(), self.content)

    def test_a_download_that_stalls_midway_raises_the_client_timeout(self) -> None:
        proxy = self.proxy(stall=True)
        client = FileStorage(API_KEY or "", proxy.url, timeout=1)
        target = os.path.join(self.directory, "stalled.bin")
        with self.assertRaises(APITimeoutError) as stalled:
            client.files.download_to(self.file_id, target)
        self.assertEqual((stalled.exception.code, proxy.answers_cut), ("timeout", 1))
        self.assertFalse(os.path.exists(target))

    def test_errors_of_a_download_do_not_show_its_signed_link(self) -> None:
        # The download link's signature is good for an hour, and error messages end up in logs and bug reports.
        for stall, expected in ((True, APITimeoutError), (False, APIConnectionError)):
            proxy = TestProxy(BASE_URL or "")
            self.addCleanup(proxy.close)
            proxy.cut_answers(DOWNLOAD, 0, stall=stall)  # headers that never come; a connection closed without an answer
            with self.assertRaises(APIConnectionError) as failed:
                FileStorage(API_KEY or "", proxy.url, timeout=1, max_retries=0).files.download_to(self.file_id, io.BytesIO())
            error = failed.exception
            self.assertIs(type(error), expected)
            self.assertRegex(str(error), r"GET /v1/files/file_\w+/download\?<redacted>")
            self.assertNotIn("signature", f"{error} {error!r} {vars(error)}")


if __name__ == "__main__":
    unittest.main()
