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
        # A download's continuation after a cut (see ``as_download``): the file's next byte to give and its last one
        # wanted (None: to the end), the version's strong ETag, and how to ask for the rest.
        self._next = 0
        self._last: int | None = None
        self._etag: str | None = None
        self._reopen: Callable[[Mapping[str, str]], Response] | None = None
        self._resumes_left = 0

    def as_download(self, range_header: str | None, reopen: Callable[[Mapping[str, str]], Response] | None = None, retries: int = 0) -> Response:
        """
        Makes this answer a download of ``range_header`` (``bytes=2-5``, ``bytes=7-``, ``bytes=-3``, or None: the whole
        file). A whole-file answer (200) to a range request, as a proxy or cache that does not do ranges gives, is
        narrowed to the bytes asked for: those before them are read and dropped, and the body ends after them. With
        ``reopen``, a body cut off part-way is continued up to ``retries`` times: ``reopen`` sends the request again
        with the headers given (``Range`` from the next byte, ``If-Range`` the ETag), and only the rest of the same
        version is accepted, so no byte is given twice. Answers itself.
        """
        first, last = self._window(range_header)
        self._skip = first if self.status == 200 else 0
        self._next, self._last = first, last
        self._left = None if last is None else last - first + 1
        etag = self.headers.get("etag")
        self._etag = etag if etag is not None and etag.startswith('"') else None
        self._reopen, self._resumes_left = reopen, retries
        return self

    def _window(self, range_header: str | None) -> tuple[int, int | None]:
        """The first and last byte of the file this download gives (None: to the end of the file)."""
        if self.status == 206:
            content_range = re.fullmatch(r"bytes (\d+)-(\d+)/(?:\d+|\*)", self.headers.get("content-range", "").strip())
            if content_range is None:
                return 0, None
            return int(content_range.group(1)), int(content_range.group(2))
        asked = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header or "")
        if self.status != 200 or asked is None:
            return 0, None
        first, last = asked.groups()
        if first:
            return int(first), int(last) if last else None
        # The last ``last`` bytes: where they start needs the file's length.
        if self._expected is None:
            self.close()
            raise self._invalid_response(f"asked for the last {last} bytes, the server sent the whole file without its length (a proxy that ignores Range?)")
        return max(0, self._expected - int(last)), self._expected - 1

    def read(self, size: int = -1) -> bytes:
        """
        The next ``size`` bytes of the body, or the rest of it; b"" at its end. Raises ``APIConnectionError`` when the
        connection ends before the whole body arrived, ``APITimeoutError`` when no byte came within the timeout (a
        download first asks for the rest, as many times as the client retries).
        """
        while True:
            try:
                return self._read_window(size)
            except APIConnectionError as error:
                if not self._resume(error):
                    raise

    def _read_window(self, size: int) -> bytes:
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
        self._next += len(data)
        if self._left is not None:
            self._left -= len(data)
        return data

    def _resume(self, cut: APIConnectionError) -> bool:
        """Continues a cut download with the rest of the same version of the file; False when it cannot."""
        if self._reopen is None or self._resumes_left <= 0 or self._etag is None:
            return False
        self._resumes_left -= 1
        time.sleep(backoff_seconds(0))
        wanted = f"bytes={self._next}-{'' if self._last is None else self._last}"
        rest = self._reopen({"Range": wanted, "If-Range": self._etag})
        content_range = re.match(r"bytes (\d+)-", rest.headers.get("content-range", ""))
        if rest.headers.get("etag") == self._etag and rest.status == 206 and content_range is not None and int(content_range.group(1)) == self._next:
            skip = 0
        elif rest.headers.get("etag") == self._etag and rest.status == 200:
            # A whole-file answer of the same version (a proxy that ignores Range) carries the rest too.
            skip = self._next
        else:
            rest.close()
            raise APIConnectionError(
                f"{self._request}: the download was cut and the file changed on the server since it began (HTTP {rest.status}); download it again.",
                code="connection_error",
            ) from cut
        self._connection, self._raw, self._expected, self._received = rest._connection, rest._raw, rest._expected, 0
        self._skip = skip
        return True

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
        return self._invalid_response(
            f"the server answered {self.status} with a body that is not the JSON expected ({content_type}): {jsonlib.dumps(excerpt, ensure_ascii=False)}"
        )

    def _invalid_response(self, problem: str) -> InvalidResponseError:
        """An InvalidResponseError about this answer: its request, status, request id and headers, and the problem."""
        return InvalidResponseError(
            f"{self._request}: {problem}",
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

    def download(self, path: str | Callable[[], str], *, headers: Mapping[str, str]) -> Response:
        """
        A download (a signed link's or a share's route, without the key) of the ``Range`` in ``headers`` if any: its
        body gives exactly those bytes, and one cut off part-way is continued from the byte it stopped at, up to
        ``max_retries`` times (see ``Response.as_download``). ``path`` may be a function giving it, called again for
        each continuation: a signed link is fresh then, as a long download outlives the hour of the first.
        """
        path_now: Callable[[], str]
        if isinstance(path, str):
            fixed_path = path
            path_now = lambda: fixed_path  # noqa: E731
        else:
            path_now = path
        response = self.send("GET", path_now(), anonymous=True, headers=headers)
        reopen: Callable[[Mapping[str, str]], Response] = lambda rest: self.send("GET", path_now(), anonymous=True, headers={**headers, **rest})
        return response.as_download(headers.get("Range"), reopen, self.max_retries)

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
