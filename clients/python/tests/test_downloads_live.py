"""Downloads whose connection is cut or stalls midway, through a local proxy in front of the live server."""

from __future__ import annotations

import io
import os
import re
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
        # Without retries a cut is not continued (with them, see CutDownloadsContinued).
        proxy = self.proxy()
        client = FileStorage(API_KEY or "", proxy.url, max_retries=0)
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
        client = FileStorage(API_KEY or "", proxy.url, timeout=1, max_retries=0)
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



@needs_server
class CutDownloadsContinued(unittest.TestCase):
    """A download cut off part-way is continued from the byte it stopped at (Range and If-Range), as a retry."""

    def setUp(self) -> None:
        self.content = os.urandom(300 * KiB)
        uploaded = FileStorage(API_KEY or "", BASE_URL or "").files.upload(self.content, name="continued.bin")
        self.file_id, self.etag = uploaded["id"], f'"{uploaded["md5_hash"]}"'
        self.proxy = TestProxy(BASE_URL or "")
        self.addCleanup(self.proxy.close)
        self.client = FileStorage(API_KEY or "", self.proxy.url)

    def resumed_from(self) -> int:
        """The byte the continuation asked for, checking it asked for the same version."""
        heads = [head.decode("latin-1") for head in self.proxy.heads if re.match(DOWNLOAD, head.decode("latin-1"))]
        self.assertEqual(len(heads), 2, "the download and its continuation")
        self.assertRegex(heads[1], rf"(?im)^if-range: {re.escape(self.etag)}\r?$")
        return int(re.search(r"(?im)^range: bytes=(\d+)-", heads[1]).group(1))  # type: ignore[union-attr]

    def test_a_cut_download_is_continued_and_each_byte_arrives_once(self) -> None:
        self.proxy.cut_answers(DOWNLOAD, 100 * KiB, times=1)
        copy = io.BytesIO()
        self.assertEqual(self.client.files.download_to(self.file_id, copy), len(self.content))
        self.assertEqual((copy.getvalue(), self.proxy.answers_cut), (self.content, 1))
        self.assertTrue(0 < self.resumed_from() < len(self.content))

    def test_a_cut_range_is_continued_within_it(self) -> None:
        self.proxy.cut_answers(DOWNLOAD, 50 * KiB, times=1)
        with self.client.files.download(self.file_id, start=100 * KiB, end=250 * KiB - 1) as part:
            self.assertEqual(b"".join(part.iter_bytes()), self.content[100 * KiB : 250 * KiB])
        self.assertTrue(100 * KiB < self.resumed_from() < 250 * KiB)

    def test_a_cut_download_continued_through_a_proxy_that_ignores_range_gets_each_byte_once(self) -> None:
        self.proxy.ignore_ranges(DOWNLOAD)
        self.proxy.cut_answers(DOWNLOAD, 100 * KiB, times=1)
        with tempfile.TemporaryDirectory() as directory:
            target = os.path.join(directory, "copy.bin")
            self.client.files.download_to(self.file_id, target)
            with open(target, "rb") as written:
                self.assertEqual(written.read(), self.content)
        self.assertEqual(self.proxy.answers_cut, 1)


if __name__ == "__main__":
    unittest.main()
