"""Downloads whose connection is cut or stalls midway, through a local proxy in front of the live server."""

from __future__ import annotations

import io
import os
import socket
import tempfile
import threading
import unittest
from urllib.parse import urlsplit

from file_storage import APIConnectionError, APITimeoutError, FileStorage

from .live import API_KEY, BASE_URL, needs_server

KiB = 1024


class DownloadCuttingProxy:
    """
    A TCP proxy to the server on 127.0.0.1 that passes requests through, but ends the answer to a download (a GET of
    a path ending in /download) after ``answer_bytes`` bytes: it closes the connection, as a peer that went away does,
    or with ``stall=True`` keeps it open and sends nothing more.
    """

    def __init__(self, upstream: tuple[str, int], answer_bytes: int, *, stall: bool = False) -> None:
        self._upstream = upstream
        self._answer_bytes = answer_bytes
        self._stall = stall
        self._closed = threading.Event()
        self.cut_downloads = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._upstream)
            is_download = threading.Event()
            threading.Thread(target=self._requests, args=(client, server, is_download), daemon=True).start()
            threading.Thread(target=self._answers, args=(server, client, is_download), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, is_download: threading.Event) -> None:
        try:
            while chunk := client.recv(65536):
                request_line = chunk.split(b"\r\n", 1)[0].split(b" ")
                if len(request_line) == 3 and request_line[0] == b"GET" and request_line[1].split(b"?")[0].endswith(b"/download"):
                    is_download.set()
                server.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(client, server)

    def _answers(self, server: socket.socket, client: socket.socket, is_download: threading.Event) -> None:
        budget = self._answer_bytes
        try:
            while chunk := server.recv(65536):
                if is_download.is_set() and len(chunk) >= budget:
                    client.sendall(chunk[:budget])
                    self.cut_downloads += 1
                    if self._stall:
                        self._closed.wait()
                    return
                if is_download.is_set():
                    budget -= len(chunk)
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(client, server)

    def close(self) -> None:
        self._closed.set()
        self._listener.close()


def _close(*ends: socket.socket) -> None:
    for end in ends:
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        end.close()


@needs_server
class CutDownloads(unittest.TestCase):
    def setUp(self) -> None:
        self.content = os.urandom(300 * KiB)
        self.file_id = FileStorage(API_KEY or "", BASE_URL or "").files.upload(self.content, name="cut-download.bin")["id"]
        server = urlsplit(BASE_URL or "")
        self.upstream = (server.hostname or "127.0.0.1", server.port or 80)
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.directory = directory.name

    def proxy(self, *, stall: bool = False) -> DownloadCuttingProxy:
        proxy = DownloadCuttingProxy(self.upstream, 100 * KiB, stall=stall)
        self.addCleanup(proxy.close)
        return proxy

    def test_a_download_cut_off_midway_raises_and_leaves_no_partial_file(self) -> None:
        proxy = self.proxy()
        client = FileStorage(API_KEY or "", proxy.url)
        target = os.path.join(self.directory, "copy.bin")
        with self.assertRaises(APIConnectionError) as cut_off:
            client.files.download_to(self.file_id, target)
        self.assertEqual((cut_off.exception.code, proxy.cut_downloads), ("connection_error", 1))
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
        self.assertEqual((stalled.exception.code, proxy.cut_downloads), ("timeout", 1))
        self.assertFalse(os.path.exists(target))


if __name__ == "__main__":
    unittest.main()
