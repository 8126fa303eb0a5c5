"""What the conformance runner needs besides the library: a local webhook receiver and a proxy that cuts a connection."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


class CuttingProxy:
    """
    A TCP proxy to the server on 127.0.0.1. Once ``cut_after(n)`` is called, it forwards ``n`` more bytes from clients
    to the server and then closes that connection on both sides, as a dropped network would; then it passes
    everything again.
    """

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._budget: int | None = None
        self.cuts = 0
        self.forwarded = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def cut_after(self, byte_count: int) -> None:
        with self._lock:
            self._budget = byte_count

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._upstream)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, upstream: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if upstream:
                    with self._lock:
                        if self._budget is not None and len(chunk) >= self._budget:
                            chunk, cut = chunk[: self._budget], True
                            self._budget = None
                            self.cuts += 1
                        else:
                            cut = False
                            if self._budget is not None:
                                self._budget -= len(chunk)
                        self.forwarded += len(chunk)
                    target.sendall(chunk)
                    if cut:
                        break
                else:
                    target.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, target):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                end.close()

    def close(self) -> None:
        self._listener.close()
