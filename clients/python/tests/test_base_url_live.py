"""A server that a reverse proxy serves under a path (``https://example.com/storage``), and upload urls given absolute."""

from __future__ import annotations

import hashlib
import io
import os
import unittest

from conformance.support import TestProxy
from file_storage import FileStorage

from .live import API_KEY, BASE_URL, needs_server

KiB = 1024


@needs_server
class UnderAPathPrefix(unittest.TestCase):
    def proxy(self) -> TestProxy:
        """The server under /storage; the proxy answers 404 to anything outside it."""
        proxy = TestProxy(BASE_URL or "", prefix="/storage")
        self.addCleanup(proxy.close)
        return proxy

    def test_every_call_goes_under_the_path_of_base_url(self) -> None:
        proxy = self.proxy()
        client = FileStorage(API_KEY or "", proxy.url + "/", resumable_threshold=256 * KiB, chunk_size=128 * KiB)
        folder = client.folders.create("Under a prefix")
        small = client.files.upload(b"small", name="small.txt", folder_id=folder["id"])
        content = os.urandom(300 * KiB)
        # Through tus: the server's Location (/v1/uploads/{id}) is under the base URL too.
        big = client.files.upload(content, name="big.bin", folder_id=folder["id"])
        self.assertEqual(big["md5_hash"], hashlib.md5(content).hexdigest())
        self.assertEqual([f["name"] for f in client.files.list_all(folder_id=folder["id"], per_page=1, sort="name_asc")], ["big.bin", "small.txt"])
        copy = io.BytesIO()
        self.assertEqual(client.files.download_to(big["id"], copy), len(content))
        self.assertEqual(copy.getvalue(), content)
        share = client.shares.create(small["id"])
        self.assertEqual(client.shares.open(share["url"])["file"]["name"], "small.txt")
        with client.shares.download(share["url"]) as shared:
            self.assertEqual(shared.read(), b"small")
        methods = {line.split(" ")[0] for line in proxy.requests}
        self.assertTrue({"POST", "PATCH", "GET"} <= methods, proxy.requests)
        self.assertEqual([line for line in proxy.requests if not line.split(" ")[1].startswith("/storage/")], [])

    def test_an_absolute_upload_url_is_used_as_given(self) -> None:
        # An upload's url kept by one process, resumed by another whose base_url is another address of the server.
        proxy = self.proxy()
        content = os.urandom(200 * KiB)
        direct = FileStorage(API_KEY or "", BASE_URL or "")
        upload = direct.uploads.create(content, name="absolute.bin")
        absolute_url = proxy.url + upload.url
        resumed = direct.uploads.resume(absolute_url, content)
        self.assertEqual(resumed.offset, 0)
        uploaded = resumed.send()
        self.assertEqual(uploaded["md5_hash"], hashlib.md5(content).hexdigest())
        upload_path = f"/storage{upload.url}"
        self.assertEqual(proxy.requests, [f"HEAD {upload_path}", f"PATCH {upload_path}"])


if __name__ == "__main__":
    unittest.main()
