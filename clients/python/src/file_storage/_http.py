"""Sends requests with http.client: authentication, timeouts, retries with backoff, automatic Idempotency-Key."""

from __future__ import annotations

import http.client
import json as jsonlib
import random
import re
import ssl
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlencode, urlsplit

from ._version import __version__
from .errors import APIConnectionError, APITimeoutError, FileStorageError, InvalidResponseError, error_from_response

RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
#: A 409 with this code is a retry that arrived while the first request with its Idempotency-Key still runs: after
#: Retry-After, the same key gets that request's stored answer.
KEY_IN_USE = "idempotency_key_in_use"
MAX_BACKOFF_SECONDS = 8.0
#: The longest Retry-After the client waits by itself; asked for longer, it raises at once (the error's retry_after).
MAX_RETRY_AFTER_SECONDS = 120.0
READ_BYTES = 64 * 1024
BODY_EXCERPT_CHARS = 200


@dataclass
class Body:
    """A request body as chunks of bytes; ``open`` produces them again for a retry when ``replayable``."""

    open: Callable[[], Iterable[bytes]]
    length: int | None
    content_type: str | None = None
    replayable: bool = True


class Response:
    """An answer of the server whose body has not been read yet: read it whole, or in chunks (a download)."""

    def __init__(self, connection: http.client.HTTPConnection, raw: http.client.HTTPResponse, request: str, timeout: float) -> None:
        self._connection = connection
        self._raw = raw
        self._request = request
        self._timeout = timeout
        # What Content-Length promised (None: chunked or until the connection closes), and what arrived so far.
        self._expected = raw.length
        self._received = 0
        # Of a whole-file answer to a range request: bytes still to pass over, and how many to give (None: all).
        self._skip = 0
        self._left: int | None = None
        self.status = raw.status
        self.reason = raw.reason
        self.headers: dict[str, str] = {key.lower(): value for key, value in raw.getheaders()}

    def keep_range(self, range_header: str | None) -> Response:
        """
        Makes a whole-file answer (200) to a request for ``range_header`` (``bytes=2-5``, ``bytes=7-``, ``bytes=-3``) give
        only those bytes, as a proxy or cache that does not do ranges answers: the bytes before them are read and
        dropped, and the body ends after them. A 206, or no range asked for, is left as it is. Answers itself.
        """
        asked = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header or "")
        if self.status != 200 or asked is None:
            return self
        first, last = asked.groups()
        if not first:
            # The last ``last`` bytes: where they start needs the file's length.
            if self._expected is None:
                self.close()
                raise InvalidResponseError(
                    f"{self._request}: asked for the last {last} bytes, the server sent the whole file without its length (a proxy that ignores Range?)",
                    code="invalid_response",
                    status=self.status,
                    request_id=self.headers.get("x-request-id"),
                    headers=self.headers,
                )
            self._skip = max(0, self._expected - int(last))
            self._left = self._expected - self._skip
        else:
            self._skip = int(first)
            self._left = None if not last else int(last) - int(first) + 1
        return self

    def read(self, size: int = -1) -> bytes:
        """
        The next ``size`` bytes of the body, or the rest of it; b"" at its end. Raises ``APIConnectionError`` when the
        connection ends before the whole body arrived, ``APITimeoutError`` when no byte came within the timeout.
        """
        while self._skip > 0:
            passed_over = self._read_body(min(self._skip, READ_BYTES))
            if not passed_over:
                return b""
            self._skip -= len(passed_over)
        if self._left is not None:
            if self._left == 0:
                return b""
            size = self._left if size < 0 else min(size, self._left)
        data = self._read_body(size)
        if self._left is not None:
            self._left -= len(data)
        return data

    def _read_body(self, size: int) -> bytes:
        try:
            data = self._raw.read(None if size < 0 else size)
        except TimeoutError as error:
            self.close()
            raise APITimeoutError(f"{self._request}: no bytes of the answer within {self._timeout} s.", code="timeout") from error
        except (OSError, http.client.HTTPException) as error:
            self.close()
            raise APIConnectionError(f"{self._request}: the answer was cut off: {error!r}", code="connection_error") from error
        self._received += len(data)
        # http.client's read(n) answers b"" at an early end of the connection instead of raising IncompleteRead.
        if not data and size != 0 and self._expected is not None and self._received < self._expected:
            self.close()
            raise APIConnectionError(
                f"{self._request}: the connection closed after {self._received} of {self._expected} bytes.", code="connection_error"
            )
        return data

    def iter_bytes(self, chunk_size: int = READ_BYTES) -> Iterator[bytes]:
        """The body in chunks of at most ``chunk_size`` bytes, as it arrives; raises like ``read`` when it is cut off."""
        try:
            while chunk := self.read(chunk_size):
                yield chunk
        finally:
            self.close()

    def json(self) -> Any:
        """The body parsed as JSON; one that is not (a captive portal's or a proxy's page) raises InvalidResponseError."""
        try:
            content = self.read()
        finally:
            self.close()
        try:
            return jsonlib.loads(content.decode("utf-8"))
        except ValueError as error:  # UnicodeDecodeError is a ValueError too
            raise self.invalid(content) from error

    def invalid(self, content: bytes) -> InvalidResponseError:
        """The error for a body that is not the JSON envelope expected: its status, content type and first characters."""
        excerpt = " ".join(content.decode("utf-8", errors="replace").split())
        if len(excerpt) > BODY_EXCERPT_CHARS:
            excerpt = excerpt[:BODY_EXCERPT_CHARS] + "…"
        content_type = self.headers.get("content-type", "no content type")
        return InvalidResponseError(
            f"{self._request}: the server answered {self.status} with a body that is not the JSON expected ({content_type}): {jsonlib.dumps(excerpt, ensure_ascii=False)}",
            code="invalid_response",
            status=self.status,
            request_id=self.headers.get("x-request-id"),
            headers=self.headers,
        )

    def close(self) -> None:
        self._raw.close()
        self._connection.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def backoff_seconds(attempt: int) -> float:
    """0.5 s, 1 s, 2 s… with jitter, at most 8 s."""
    ceiling = min(MAX_BACKOFF_SECONDS, 0.5 * 2.0**attempt)
    return ceiling / 2 + random.random() * (ceiling / 2)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def request_label(method: str, url: SplitResult) -> str:
    """A request as error messages name it: method and path, a query left out (a signed download link's signature)."""
    return f"{method} {url.path}?<redacted>" if url.query else f"{method} {url.path}"


class HttpClient:
    def __init__(self, *, api_key: str, base_url: str, timeout: float, max_retries: int, ssl_context: ssl.SSLContext | None = None) -> None:
        if not api_key:
            raise ValueError("FileStorage needs an api_key.")
        if not base_url:
            raise ValueError("FileStorage needs a base_url.")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL such as https://files.example.com, not {base_url!r}.")
        self._api_key = api_key
        # The path a reverse proxy serves the API under, if any, is kept: requests go to <base_url>/v1/...
        self.base_url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.timeout = timeout
        self.max_retries = max_retries
        self._ssl_context = ssl_context

    def data(self, method: str, path: str, **options: Any) -> Any:
        """The ``data`` of a successful answer's envelope."""
        return self.envelope(method, path, **options)["data"]

    def envelope(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        response = self.send(method, path, **options)
        envelope = response.json()
        if not isinstance(envelope, dict):
            raise response.invalid(jsonlib.dumps(envelope).encode())
        return envelope

    def url(self, path: str) -> SplitResult:
        """
        Where a request goes: a path of the API (``/v1/...``) under the base URL, its path prefix kept; an absolute URL
        the server gave (a tus Location) as it is.
        """
        return urlsplit(path if path.startswith(("http://", "https://")) else self.base_url + path)

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        json: Any = None,
        body: Body | None = None,
        headers: Mapping[str, str] | None = None,
        anonymous: bool = False,
        retry: bool = True,
        idempotency_key: str | None = None,
    ) -> Response:
        """
        One logical request: retried on 429 and 409 ``idempotency_key_in_use`` (after Retry-After), 502/503/504 and
        connection errors, with backoff, as long as its body can be sent again. Every attempt of a POST carries the same
        Idempotency-Key, so a retry after a lost answer replays the first result instead of acting twice. Answers a
        Response whose body is unread.
        """
        sent_headers = {"Accept": "application/json", "User-Agent": f"file-storage-python/{__version__}"}
        sent_headers.update(headers or {})
        if not anonymous:
            sent_headers["Authorization"] = f"Bearer {self._api_key}"
        if method == "POST" and not any(key.lower() == "idempotency-key" for key in sent_headers):
            sent_headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        if json is not None:
            encoded = jsonlib.dumps(json).encode("utf-8")
            body = Body(open=lambda: [encoded], length=len(encoded), content_type="application/json")
        if body is not None:
            if body.content_type:
                sent_headers["Content-Type"] = body.content_type
            if body.length is not None:
                sent_headers["Content-Length"] = str(body.length)
        elif method in ("POST", "PATCH", "PUT"):
            sent_headers["Content-Length"] = "0"
        url = self.url(path)
        request = request_label(method, url)
        pairs = [(key, _query_value(value)) for key, value in (query or {}).items() if value is not None]
        if pairs:
            url = url._replace(query=f"{url.query}&{urlencode(pairs)}" if url.query else urlencode(pairs))
        max_retries = self.max_retries if retry and (body is None or body.replayable) else 0

        attempt = 0
        while True:
            try:
                response = self._attempt(method, url, request, sent_headers, body)
            except APIConnectionError:
                if attempt >= max_retries:
                    raise
                time.sleep(backoff_seconds(attempt))
                attempt += 1
                continue
            if 200 <= response.status < 300:
                return response
            error = self._error(response)
            # Only its envelope tells a 409 worth waiting for (the key in use) from a conflict, which is final.
            retryable = response.status in RETRYABLE_STATUSES or (response.status == 409 and error.code == KEY_IN_USE)
            # Asked to wait longer than the client waits by itself, a retry could only be refused again: the error (with
            # its retry_after) goes to the caller at once, to schedule it.
            retry_after = error.retry_after
            if attempt < max_retries and retryable and (retry_after is None or retry_after <= MAX_RETRY_AFTER_SECONDS):
                time.sleep(backoff_seconds(attempt) if retry_after is None else retry_after)
                attempt += 1
                continue
            raise error

    @staticmethod
    def _error(response: Response) -> FileStorageError:
        try:
            content = response.read() if response.status != 204 else b""
        except APIConnectionError:
            content = b""
        finally:
            response.close()
        return error_from_response(response.status, response.reason, response.headers, content)

    def _connection(self, url: SplitResult) -> http.client.HTTPConnection:
        if url.scheme == "https":
            return http.client.HTTPSConnection(url.hostname or "", url.port, timeout=self.timeout, context=self._ssl_context, blocksize=READ_BYTES)
        return http.client.HTTPConnection(url.hostname or "", url.port, timeout=self.timeout, blocksize=READ_BYTES)

    def _attempt(self, method: str, url: SplitResult, request: str, headers: dict[str, str], body: Body | None) -> Response:
        connection = self._connection(url)
        target = f"{url.path}?{url.query}" if url.query else url.path
        try:
            try:
                connection.request(
                    method,
                    target,
                    body=body.open() if body is not None else None,
                    headers=headers,
                    encode_chunked=body is not None and body.length is None,
                )
            except (OSError, http.client.HTTPException) as send_error:
                # The server may have answered and closed early (a 413 decided from Content-Length): read that answer.
                if connection.sock is None:
                    raise
                try:
                    return Response(connection, connection.getresponse(), request, self.timeout)
                except (OSError, http.client.HTTPException):
                    raise send_error from None
            return Response(connection, connection.getresponse(), request, self.timeout)
        except TimeoutError as error:
            connection.close()
            raise APITimeoutError(f"No answer from {request} within {self.timeout} s.", code="timeout") from error
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise APIConnectionError(f"{request} failed: {error!r}", code="connection_error") from error
        except BaseException:
            connection.close()
            raise
