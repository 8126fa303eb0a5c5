"""Retries, idempotency keys and typed errors, against a local HTTP server that answers as told (faults the real
server cannot be made to produce on demand: a 503 from a proxy, an answer that never comes)."""

import json
import os
import socket
import threading
import time
import unittest
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from file_storage import (
    APIConnectionError,
    APITimeoutError,
    ConflictError,
    FileStorage,
    FileTooLargeError,
    IdempotencyError,
    InternalServerError,
    InvalidResponseError,
    RateLimitError,
    ServiceUnavailableError,
)


class ScriptedServer:
    """Answers each request with the next scripted (status, headers, body); records what it received."""

    def __init__(self, answers: list[tuple[int, dict[str, str], Any]], delay: float = 0) -> None:
        self.answers = answers
        self.received: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if self.headers.get("Transfer-Encoding") == "chunked":
                    body = b""
                    while size := int(self.rfile.readline().strip(), 16):
                        body += self.rfile.read(size)
                        self.rfile.readline()
                    self.rfile.readline()
                else:
                    body = self.rfile.read(length)
                server.received.append({"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body})
                time.sleep(delay)
                status, headers, payload = server.answers.pop(0) if server.answers else (500, {}, None)
                encoded = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                try:
                    self.wfile.write(encoded)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test)

            do_GET = do_HEAD = do_POST = do_PATCH = do_DELETE = handle_one

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def ok(data: Any, status: int = 200) -> tuple[int, dict[str, str], Any]:
    return (status, {}, {"success": True, "data": data})


def failure(status: int, code: str, headers: dict[str, str] | None = None, details: dict[str, Any] | None = None) -> tuple[int, dict[str, str], Any]:
    error: dict[str, Any] = {"code": code, "message": f"{code} happened"}
    if details:
        error["details"] = details
    return (status, {"X-Request-Id": "req_123", **(headers or {})}, {"success": False, "error": error})


class Retries(unittest.TestCase):
    def serve(self, answers: list[tuple[int, dict[str, str], Any]], delay: float = 0) -> ScriptedServer:
        server = ScriptedServer(answers, delay)
        self.addCleanup(server.close)
        return server

    def test_a_post_is_retried_after_503_and_502_with_the_same_idempotency_key(self) -> None:
        server = self.serve([failure(503, "service_unavailable"), (502, {"Content-Type": "text/html"}, b"<html>bad gateway</html>"), ok({"id": "fld_1"}, 201)])
        folder = FileStorage("key", server.url).folders.create("Reports")
        self.assertEqual(folder["id"], "fld_1")
        keys = [request["headers"]["Idempotency-Key"] for request in server.received]
        self.assertEqual(len(keys), 3)
        self.assertEqual(len(set(keys)), 1)
        self.assertEqual([json.loads(request["body"]) for request in server.received], [{"name": "Reports"}] * 3)

    def test_a_429_is_retried_after_retry_after(self) -> None:
        server = self.serve([failure(429, "rate_limit_exceeded", {"Retry-After": "1"}), ok({"id": "usr_1"})])
        started = time.monotonic()
        self.assertEqual(FileStorage("key", server.url).user.info()["id"], "usr_1")
        self.assertGreaterEqual(time.monotonic() - started, 0.95)
        self.assertEqual(len(server.received), 2)

    def test_a_post_whose_key_is_still_in_use_is_retried_after_retry_after_but_a_conflict_is_not(self) -> None:
        server = self.serve([failure(409, "idempotency_key_in_use", {"Retry-After": "1"}), ok({"id": "fld_1"}, 201), failure(409, "conflict")])
        client = FileStorage("key", server.url)
        started = time.monotonic()
        self.assertEqual(client.folders.create("Reports")["id"], "fld_1")
        self.assertGreaterEqual(time.monotonic() - started, 0.95)
        self.assertEqual(len({request["headers"]["Idempotency-Key"] for request in server.received}), 1)
        self.assertEqual(len(server.received), 2)
        with self.assertRaises(ConflictError) as conflict:
            client.folders.create("Reports")
        self.assertEqual((conflict.exception.status, conflict.exception.code), (409, "conflict"))
        self.assertEqual(len(server.received), 3)

    def test_a_resume_asks_again_while_the_upload_is_locked_for_upload_lock_timeout_seconds(self) -> None:
        server = self.serve([failure(423, "conflict")] * 50)
        started = time.monotonic()
        with self.assertRaises(ConflictError) as locked:
            FileStorage("key", server.url, upload_lock_timeout=1.5).uploads.resume(f"{server.url}/v1/uploads/upl_1", b"data")
        self.assertEqual(locked.exception.status, 423)
        self.assertGreaterEqual(time.monotonic() - started, 1.5)
        self.assertGreaterEqual(len(server.received), 3)
        self.assertEqual({request["method"] for request in server.received}, {"HEAD"})

    def test_a_retry_after_longer_than_the_client_waits_is_raised_at_once_with_retry_after(self) -> None:
        # Retried before then, the request could only be refused again; the caller can schedule it instead.
        cases = [
            (failure(429, "rate_limit_exceeded", {"Retry-After": "3600"}), RateLimitError),
            (failure(503, "service_unavailable", {"Retry-After": "3600"}), ServiceUnavailableError),
            ((503, {"Retry-After": "3600", "Content-Type": "text/html"}, b"<html>maintenance</html>"), ServiceUnavailableError),
            (failure(409, "idempotency_key_in_use", {"Retry-After": "3600"}), IdempotencyError),
        ]
        for answer, expected in cases:
            with self.subTest(status=answer[0], expected=expected.__name__):
                server = self.serve([answer, ok({"id": "fld_1"}, 201)])
                started = time.monotonic()
                with self.assertRaises(expected) as refused:
                    FileStorage("key", server.url, max_retries=3).folders.create("Later")
                # Waiting would take the hour asked for; one request (below) shows it was not retried.
                self.assertLess(time.monotonic() - started, 60)
                self.assertEqual((refused.exception.status, refused.exception.retry_after), (answer[0], 3600))
                self.assertEqual(len(server.received), 1)

    def test_a_page_instead_of_json_raises_invalid_response_error_with_its_status_type_and_start(self) -> None:
        # A captive portal or a proxy's error page, answered 200 where the API's JSON was expected.
        portal = b"<!DOCTYPE html>\n<html><head><title>Sign in to the hotel Wi-Fi</title></head><body>" + b"x" * 1000 + b"</body></html>"
        page = (200, {"Content-Type": "text/html", "X-Request-Id": "req_portal"}, portal)
        server = self.serve([page, page, (200, {}, [1, 2])])
        client = FileStorage("key", server.url)
        errors: list[InvalidResponseError] = []
        calls: list[Callable[[], object]] = [client.user.info, client.files.list, client.user.info]
        for call in calls:
            with self.assertRaises(InvalidResponseError) as invalid:
                call()
            errors.append(invalid.exception)
        self.assertEqual([(error.status, error.code) for error in errors], [(200, "invalid_response")] * 3)
        message = str(errors[0])
        for part in ("GET /v1/user/info", "200", "text/html", '"<!DOCTYPE html> <html><head><title>Sign in to the hotel Wi-Fi</title>'):
            self.assertIn(part, message)
        self.assertLess(len(errors[0].message), 400)
        self.assertEqual(errors[0].request_id, "req_portal")
        self.assertIn("[1, 2]", errors[2].message)
        self.assertEqual(len(server.received), 3)

    def test_retries_run_out_into_a_typed_error_with_retry_after_and_request_id(self) -> None:
        server = self.serve([failure(429, "rate_limit_exceeded", {"Retry-After": "0"})] * 2)
        with self.assertRaises(RateLimitError) as refused:
            FileStorage("key", server.url, max_retries=1).user.info()
        error = refused.exception
        self.assertEqual((error.status, error.code, error.request_id, error.retry_after), (429, "rate_limit_exceeded", "req_123", 0))
        self.assertEqual(len(server.received), 2)

    def test_an_idempotency_key_can_be_chosen(self) -> None:
        server = self.serve([ok({"deleted": [], "failed": [], "total": 0, "deleted_count": 0, "failed_count": 0})])
        FileStorage("key", server.url).files.bulk_delete(["file_1"], idempotency_key="my-key-1")
        self.assertEqual(server.received[0]["headers"]["Idempotency-Key"], "my-key-1")

    def test_an_upload_from_a_pipe_is_sent_chunked_and_not_retried(self) -> None:
        server = self.serve([failure(503, "service_unavailable"), ok({"id": "file_1"})])
        read_end, write_end = os.pipe()
        with os.fdopen(write_end, "wb") as writer:
            writer.write(b"once only")
        with os.fdopen(read_end, "rb") as reader, self.assertRaises(ServiceUnavailableError):
            FileStorage("key", server.url).files.upload(reader, name="piped.txt")
        self.assertEqual(len(server.received), 1)
        self.assertEqual(server.received[0]["headers"].get("Transfer-Encoding"), "chunked")
        self.assertIn(b"once only", server.received[0]["body"])

    def test_errors_carry_their_details_and_answers_without_an_envelope_get_the_class_of_their_status(self) -> None:
        server = self.serve(
            [failure(413, "file_too_large", details={"file_size": 11, "max_size": 10, "plan": "free"}), (500, {"Content-Type": "text/plain"}, b"oops")]
        )
        client = FileStorage("key", server.url, max_retries=0)
        with self.assertRaises(FileTooLargeError) as too_large:
            client.files.upload(b"hello world", name="big.bin")
        self.assertEqual((too_large.exception.file_size, too_large.exception.max_size, too_large.exception.plan), (11, 10, "free"))
        with self.assertRaises(InternalServerError) as broken:
            client.user.info()
        self.assertEqual((broken.exception.status, broken.exception.code), (500, "internal_error"))

    def test_no_answer_is_a_connection_error_or_a_timeout(self) -> None:
        with socket.socket() as unused:
            unused.bind(("127.0.0.1", 0))
            closed_port = unused.getsockname()[1]
        with self.assertRaises(APIConnectionError) as refused:
            FileStorage("key", f"http://127.0.0.1:{closed_port}", max_retries=0).user.info()
        self.assertEqual((refused.exception.code, refused.exception.status), ("connection_error", None))
        slow = self.serve([ok({})], delay=3)
        with self.assertRaises(APITimeoutError) as timed_out:
            FileStorage("key", slow.url, timeout=0.3, max_retries=0).user.info()
        self.assertEqual(timed_out.exception.code, "timeout")


if __name__ == "__main__":
    unittest.main()
