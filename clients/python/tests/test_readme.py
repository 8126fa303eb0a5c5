"""Runs every Python example of clients/python/README.md, in order, against a live server: each block on its own,
after a fresh prelude that provides what the README says the reader already has (``folder``, ``file``, ``other``).
Only the origins are swapped for the test server's and a local receiver's; the receiver snippet is left out (it
serves forever; the helper it calls is exercised by the conformance scenario)."""

import os
import pathlib
import re
import tempfile
import unittest

from conformance.support import WebhookReceiver

from .live import API_KEY, BASE_URL, needs_server

README = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
BLOCKS = [block for block in re.findall(r"```python\n(.*?)```", README, re.S) if "serve_forever" not in block]

PRELUDE = """
import os
from file_storage import FileStorage
client = FileStorage(api_key=os.environ["FILE_STORAGE_API_KEY"], base_url="https://files.example.com")
folder = client.folders.create("Docs")
file = client.files.upload(b"readme", name="readme.txt")
other = client.files.upload(b"other", name="other.txt")
"""


class ReadmeExamples(unittest.TestCase):
    def test_finds_the_examples(self) -> None:
        self.assertGreaterEqual(len(BLOCKS), 9)

    @needs_server
    def test_runs_every_example_as_written(self) -> None:
        receiver = WebhookReceiver()
        self.addCleanup(receiver.close)
        directory = tempfile.mkdtemp(prefix="fss-python-readme-")
        for name in ("report.pdf", "report.bin", "video.mp4"):
            pathlib.Path(directory, name).write_bytes(f"the bytes of {name}\n".encode())
        previous = os.getcwd()
        os.chdir(directory)
        self.addCleanup(os.chdir, previous)
        os.environ["FILE_STORAGE_API_KEY"] = API_KEY or ""
        for number, block in enumerate(BLOCKS, start=1):
            with self.subTest(example=number, first_line=block.splitlines()[0]):
                code = (PRELUDE + block).replace("https://files.example.com", BASE_URL or "").replace("https://example.com/hooks", receiver.url)
                exec(compile(code, f"README example {number}", "exec"), {})
        self.assertEqual(pathlib.Path(directory, "copy.bin").read_bytes(), b"readme")


if __name__ == "__main__":
    unittest.main()
