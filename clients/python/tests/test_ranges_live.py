"""Part of a file or of a shared file (HTTP Range), against the live server."""

import io
import os
import tempfile
import unittest

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


if __name__ == "__main__":
    unittest.main()
