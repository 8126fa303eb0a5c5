import email.message
import email.parser
import email.policy
import io
import os
import tempfile
import typing
import unittest

from file_storage._source import SLICE_BYTES, multipart_body, open_source


def parse(body: bytes, content_type: str) -> dict[str, tuple[bytes, dict[str, str]]]:
    raw = b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    message = typing.cast(email.message.EmailMessage, email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(raw))
    parts = {}
    for part in message.iter_parts():
        params = dict(part.get_params(header="content-disposition")[1:])
        parts[params["name"]] = (part.get_payload(decode=True), params)
    return parts


class MultipartBody(unittest.TestCase):
    def test_streams_a_path_in_slices_with_an_exact_content_length(self) -> None:
        content = os.urandom(3 * SLICE_BYTES + 17)
        with tempfile.NamedTemporaryFile(delete=False) as file:
            file.write(content)
        self.addCleanup(os.remove, file.name)
        progress: list[tuple[int, int | None]] = []
        body = multipart_body(open_source(file.name), "ré port\".bin", {"folder_id": "fld_1", "name": None}, lambda loaded, total: progress.append((loaded, total)))
        chunks = list(body.open())
        self.assertLessEqual(max(len(chunk) for chunk in chunks), SLICE_BYTES + 1024)
        sent = b"".join(chunks)
        self.assertEqual(len(sent), body.length)
        parts = parse(sent, body.content_type or "")
        self.assertEqual(parts["file"][0], content)
        self.assertEqual(parts["folder_id"][0], b"fld_1")
        self.assertNotIn("name", parts)
        self.assertEqual(progress[0], (0, len(content)))
        self.assertEqual(progress[-1], (len(content), len(content)))
        # A path can be read again for a retry: the second body is the same bytes.
        self.assertTrue(body.replayable)
        self.assertEqual(b"".join(body.open()), sent)

    def test_a_seekable_file_object_is_read_from_its_position_and_can_be_read_again(self) -> None:
        source = io.BytesIO(b"skip:the rest")
        source.seek(5)
        opened = open_source(source)
        self.assertEqual((opened.size, opened.replayable), (8, True))
        self.assertEqual(b"".join(opened.read(0, None)), b"the rest")
        self.assertEqual(b"".join(opened.read(4, 8)), b"rest")

    def test_a_pipe_has_no_known_length_and_can_be_read_only_once(self) -> None:
        read_end, write_end = os.pipe()
        with os.fdopen(write_end, "wb") as writer:
            writer.write(b"piped bytes")
        with os.fdopen(read_end, "rb") as reader:
            body = multipart_body(open_source(reader), "piped.txt", {})
            self.assertIsNone(body.length)
            self.assertFalse(body.replayable)
            self.assertEqual(parse(b"".join(body.open()), body.content_type or "")["file"][0], b"piped bytes")
            with self.assertRaises(ValueError):
                list(body.open())


if __name__ == "__main__":
    unittest.main()
