"""What the conformance runner and the library's tests need besides the library: a local webhook receiver, and a
proxy in front of the server that serves it under a path prefix or misbehaves as networks and middleboxes do."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass
class ReceivedDelivery:
    headers: dict[str, str]
    raw_body: bytes

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers.items() if key.lower() == name.lower()), None)


class WebhookReceiver:
    """A real HTTP server on 127.0.0.1 that records every POST it gets and answers 200."""

    def __init__(self) -> None:
        self.received: list[ReceivedDelivery] = []
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw_body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._changed:
                    receiver.received.append(ReceivedDelivery(headers=dict(self.headers.items()), raw_body=raw_body))
                    receiver._changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def wait_for(self, event: str, timeout: float = 30.0) -> ReceivedDelivery:
        """The first delivery of ``event`` (its X-Service-Event header), waiting up to ``timeout`` seconds."""
        return self.wait_until(lambda delivery: delivery.header("x-service-event") == event, 1, timeout, event)[0]

    def wait_until(self, matches: Callable[[ReceivedDelivery], bool], count: int, timeout: float = 30.0, what: str = "matching") -> list[ReceivedDelivery]:
        """The first ``count`` deliveries that ``matches``, waiting up to ``timeout`` seconds for them."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [delivery for delivery in self.received if matches(delivery)]
                if len(found) >= count:
                    return found[:count]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(found)} of {count} {what} deliveries within {timeout} s; received {len(self.received)}")
                self._changed.wait(left)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class TestProxy:
    """
    A TCP proxy to the server (``upstream``, its URL), on 127.0.0.1, that misbehaves on demand as networks and
    middleboxes do. It reads the head of the request on each connection (the library sends one request per connection,
    and so does each test that goes through here) and then:

    - with ``prefix`` (e.g. ``/storage``), serves the server under that path, as a reverse proxy does: the prefix is
      taken off the request path; a request outside it is answered 404 by the proxy itself. ``url`` includes it;
    - ``cut_answers(matching, after_bytes)``: ends the answers to those requests after so many bytes: closes the
      connection, as a peer that went away, or with ``stall=True`` keeps it open and sends nothing more; every such
      answer, or with ``times=n`` the next ``n`` of them;
    - ``ignore_ranges(matching)``: takes the Range and If-Range headers out of those requests, as a proxy or cache that
      does not do ranges: the server answers 200 with the whole file;
    - ``cut_request_after(n)``: forwards ``n`` more bytes from clients to the server, then closes that connection on
      both sides, as a dropped network would; then passes everything again.

    ``matching`` is a regular expression searched in ``"METHOD /path?query"``, the path without the prefix. Every
    request line received is in ``requests``.
    """

    def __init__(self, upstream: str, *, prefix: str = "") -> None:
        server = urlsplit(upstream)
        self._upstream = (server.hostname or "127.0.0.1", server.port or 80)
        self._prefix = prefix.rstrip("/")
        #: Pattern, bytes let through, stall, and how many answers more to cut (None: every one).
        self._answer_cuts: list[list[Any]] = []
        self._request_budget: int | None = None
        self._rangeless: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.requests: list[str] = []
        #: The head of every request received, as it arrived.
        self.heads: list[bytes] = []
        #: Connections cut by ``cut_request_after``, answers cut by ``cut_answers``, bytes forwarded to the server.
        self.cuts = 0
        self.answers_cut = 0
        self.forwarded = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}{self._prefix}"
        threading.Thread(target=self._accept, daemon=True).start()

    def cut_answers(self, matching: str, after_bytes: int, *, stall: bool = False, times: int | None = None) -> None:
        with self._lock:
            self._answer_cuts.append([re.compile(matching), after_bytes, stall, times])

    def ignore_ranges(self, matching: str) -> None:
        with self._lock:
            self._rangeless = re.compile(matching)

    def cut_request_after(self, byte_count: int) -> None:
        with self._lock:
            self._request_budget = byte_count

    def close(self) -> None:
        self._closed.set()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        try:
            while b"\r\n\r\n" not in head and (chunk := client.recv(65536)):
                head += chunk
        except OSError:
            pass
        if b"\r\n\r\n" not in head:
            _close(client)
            return
        method, target, version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        with self._lock:
            self.requests.append(f"{method} {target}")
        path = target.split("?", 1)[0]
        if self._prefix and path != self._prefix and not path.startswith(self._prefix + "/"):
            self._not_found(client)
            return
        target = target[len(self._prefix) :] or "/"
        if not target.startswith("/"):
            target = "/" + target
        request = f"{method} {target}"
        with self._lock:
            self.heads.append(head.split(b"\r\n\r\n", 1)[0])
            answer_cut = None
            for cut in self._answer_cuts:
                if cut[3] != 0 and cut[0].search(request):
                    answer_cut = (cut[1], cut[2])
                    cut[3] = None if cut[3] is None else cut[3] - 1
                    break
            rangeless = self._rangeless is not None and self._rangeless.search(request) is not None
        if rangeless:
            head = re.sub(rb"(?im)^(?:range|if-range):[^\r\n]*\r\n", b"", head)
        try:
            server = socket.create_connection(self._upstream)
        except OSError:
            _close(client)
            return
        rewritten = f"{request} {version}".encode("latin-1") + b"\r\n" + head.split(b"\r\n", 1)[1]
        threading.Thread(target=self._answer, args=(server, client, answer_cut), daemon=True).start()
        try:
            if self._forward_request(rewritten, server):
                while chunk := client.recv(65536):
                    if not self._forward_request(chunk, server):
                        break
        except OSError:
            pass
        finally:
            _close(client, server)

    def _forward_request(self, chunk: bytes, server: socket.socket) -> bool:
        """Sends client bytes on to the server; False once the request budget ran out and the connection is to be cut."""
        with self._lock:
            cut = self._request_budget is not None and len(chunk) >= self._request_budget
            if cut:
                chunk = chunk[: self._request_budget]
                self._request_budget = None
                self.cuts += 1
            elif self._request_budget is not None:
                self._request_budget -= len(chunk)
            self.forwarded += len(chunk)
        server.sendall(chunk)
        return not cut

    def _answer(self, server: socket.socket, client: socket.socket, answer_cut: tuple[int, bool] | None) -> None:
        budget, stall = answer_cut if answer_cut is not None else (None, False)
        try:
            while chunk := server.recv(65536):
                if budget is not None and len(chunk) >= budget:
                    client.sendall(chunk[:budget])
                    with self._lock:
                        self.answers_cut += 1
                    if stall:
                        self._closed.wait()
                    return
                if budget is not None:
                    budget -= len(chunk)
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(client, server)

    def _not_found(self, client: socket.socket) -> None:
        try:
            client.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            # Closed with a request body still unread, the connection would be reset before the client read the answer.
            client.shutdown(socket.SHUT_WR)
            client.settimeout(5)
            while client.recv(65536):
                pass
        except OSError:
            pass
        client.close()


def _close(*ends: socket.socket) -> None:
    for end in ends:
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        end.close()
