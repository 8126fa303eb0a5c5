"""Part of a file or of a shared file (HTTP Range), against the live server."""

import io
import os
import tempfile
import unittest

from conformance.support import TestProxy
from file_storage import FileStorage, InvalidRequestError

from .live import API_KEY, BASE_URL, needs_server

CONTENT = b"0123456789"


@needs_server
class ByteRanges(unittest.TestCase):
    def setUp(self) -> None:
        self.client = FileStorage(API_KEY or "", BASE_URL or "")
        self.file = self.client.files.upload(CONTENT, name="digits.txt")
        self.share = self.client.shares.create(self.file["id"], password="open sesame")

    def test_a_download_of_bytes_start_to_end_answers_those_bytes(self) -> None:
        # (start, end) inclusive, as HTTP counts them; end None: to the end; a negative start: the last bytes.
        for start, end, part, content_range in ((2, 5, b"2345", "bytes 2-5/10"), (7, None, b"789", "bytes 7-9/10"), (-3, None, b"789", "bytes 7-9/10")):
            with self.subTest(start=start, end=end):
                with self.client.files.download(self.file["id"], start=start, end=end) as content:
                    self.assertEqual((content.read(), content.status, content.headers["content-range"]), (part, 206, content_range))
                with self.client.shares.download(self.share["url"], password="open sesame", start=start, end=end) as shared:
                    self.assertEqual((shared.read(), shared.status), (part, 206))
                copy = io.BytesIO()
                self.assertEqual(self.client.files.download_to(self.file["id"], copy, start=start, end=end), len(part))
                self.assertEqual(copy.getvalue(), part)
                copy = io.BytesIO()
                self.assertEqual(self.client.shares.download_to(self.share["url"], copy, password="open sesame", start=start, end=end), len(part))
                self.assertEqual(copy.getvalue(), part)

    def test_a_range_to_a_path_writes_only_those_bytes(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            target = os.path.join(directory, "part.txt")
            self.client.files.download_to(self.file["id"], target, start=4, end=6)
            with open(target, "rb") as written:
                self.assertEqual(written.read(), b"456")

    def test_a_range_past_the_end_raises_invalid_request_error_and_one_that_cannot_be_said_value_error(self) -> None:
        with self.assertRaises(InvalidRequestError) as past_the_end:
            self.client.files.download(self.file["id"], start=20)
        self.assertEqual((past_the_end.exception.status, past_the_end.exception.details), (416, {"size": 10}))
        for start, end in ((None, 5), (-3, 9), (2, -1)):
            with self.subTest(start=start, end=end), self.assertRaises(ValueError):
                self.client.files.download(self.file["id"], start=start, end=end)

    def test_a_range_through_a_proxy_that_ignores_range_still_gives_only_those_bytes(self) -> None:
        # A proxy or cache that does not do ranges answers 200 with the whole file: a download resumed from an offset
        # (an append to the bytes already on disk) must still get only the bytes after it.
        proxy = TestProxy(BASE_URL or "")
        self.addCleanup(proxy.close)
        proxy.ignore_ranges(r"/download")
        through = FileStorage(API_KEY or "", proxy.url)
        for start, end, part in ((2, 5, b"2345"), (7, None, b"789"), (-3, None, b"789"), (4, 50, b"456789")):
            with self.subTest(start=start, end=end):
                with through.files.download(self.file["id"], start=start, end=end) as content:
                    self.assertEqual(content.read(), part)
                with through.shares.download(self.share["url"], password="open sesame", start=start, end=end) as shared:
                    self.assertEqual(b"".join(shared.iter_bytes(3)), part)
                copy = io.BytesIO()
                self.assertEqual(through.files.download_to(self.file["id"], copy, start=start, end=end), len(part))
                self.assertEqual(copy.getvalue(), part)
        with tempfile.TemporaryDirectory() as directory:
            target = os.path.join(directory, "resumed.txt")
            with open(target, "wb") as partial:
                partial.write(b"0123")
            with open(target, "ab") as rest:
                through.files.download_to(self.file["id"], rest, start=os.path.getsize(target))
            with open(target, "rb") as written:
                self.assertEqual(written.read(), CONTENT)
        self.assertGreaterEqual(sum("/download" in line for line in proxy.requests), 13, "the downloads went through the proxy")


if __name__ == "__main__":
    unittest.main()
