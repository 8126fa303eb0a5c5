"""A tus 1.0 client on http.client: creation, HEAD for the offset, PATCH in chunks, resume after failures."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

from ._http import MAX_RETRY_AFTER_SECONDS, Body, HttpClient, backoff_seconds
from ._source import OpenedSource, ProgressCallback
from .errors import ConflictError, FileStorageError, InvalidResponseError
from .types import FileObject

TUS_VERSION = "1.0.0"
#: Failures after which an upload asks HEAD for the offset and continues: the bytes the server kept are not sent again.
RESUMABLE_STATUSES = frozenset({409, 423, 429, 500, 502, 503, 504})
#: How long HEAD is asked again while an earlier request that was cut off still holds the upload (423). The server keeps
#: the lock of a PATCH whose connection went silent until its idle timeout closes it (60 s by default), and that of a
#: crashed process for 15 s: 80 s covers both.
LOCKED_TIMEOUT_SECONDS = 80.0
#: The longest pause between those HEADs; each already waits up to 3 s for the lock at the server.
LOCKED_BACKOFF_SECONDS = 2.0


def encode_metadata(values: dict[str, str | None]) -> str:
    """tus Upload-Metadata: comma-separated ``key base64(value)`` pairs."""
    return ",".join(f"{key} {base64.b64encode(value.encode()).decode()}" for key, value in values.items() if value is not None)


class ResumableUpload:
    """
    An upload through the tus endpoint ``/v1/uploads``. ``url`` names it: keep it to resume with
    ``client.uploads.resume(url, source)`` after a crash. ``send()`` uploads what the server does not have yet.
    """

    def __init__(
        self,
        http: HttpClient,
        source: OpenedSource,
        url: str,
        offset: int,
        chunk_size: int,
        get_file: Callable[[str], FileObject],
        lock_timeout: float = LOCKED_TIMEOUT_SECONDS,
    ) -> None:
        if source.size is None:
            raise ValueError("A resumable upload needs a source of known size (a path, bytes or a seekable file).")
        self._http = http
        self._source = source
        #: As the server gave it (relative, ``/v1/uploads/{id}``, under the base URL of the client that resumes it; or
        #: absolute, used as it is).
        self.url = url
        #: Bytes the server holds.
        self.offset = offset
        self.size: int = source.size
        self.chunk_size = chunk_size
        #: Seconds to keep asking while an earlier request that was cut off still holds the upload (423).
        self.lock_timeout = lock_timeout
        #: The id of the file once the upload is complete.
        self.file_id: str | None = None
        self._get_file = get_file

    def send(self, on_progress: ProgressCallback | None = None) -> FileObject:
        """
        Sends the rest of the file, one PATCH per chunk (each streamed from the source). After a failed PATCH it asks
        the server for its offset and continues from there, up to the client's ``max_retries`` failures in a row. A
        PATCH refused because another request still holds the upload (423) is no failure of this one: it waits for the
        upload (``refresh``, up to ``lock_timeout`` seconds in a row), whatever ``max_retries`` is.
        Answers the file once the server has committed it.
        """
        failures = 0
        locked_since: float | None = None
        if on_progress:
            on_progress(self.offset, self.size)
        while self.file_id is None:
            try:
                end = min(self.size, self.offset + self.chunk_size)
                start = self.offset
                answer = self._http.send(
                    "PATCH",
                    self.url,
                    headers={"Tus-Resumable": TUS_VERSION, "Upload-Offset": str(start), "Content-Type": "application/offset+octet-stream"},
                    body=Body(open=lambda: self._source.read(start, end), length=end - start),
                    retry=False,
                )
                answer.close()
                self.offset = int(answer.headers["upload-offset"])
                self.file_id = answer.headers.get("x-file-id")
                failures = 0
                locked_since = None
                if on_progress:
                    on_progress(self.offset, self.size)
            except ConflictError as error:
                if error.status != 423:
                    raise
                # Held by a request still running (one of ours whose connection was cut, say): wait for it to end.
                locked_since = locked_since if locked_since is not None else time.monotonic()
                if time.monotonic() - locked_since > self.lock_timeout:
                    raise
                self.refresh()
            except FileStorageError as error:
                retry_after = error.retry_after
                # A Retry-After longer than the client waits: a retry before then could only be refused again.
                too_long = retry_after is not None and retry_after > MAX_RETRY_AFTER_SECONDS
                if not _resumable(error) or failures >= self._http.max_retries or too_long:
                    raise
                failures += 1
                time.sleep(retry_after if retry_after is not None else backoff_seconds(failures - 1))
                self.refresh()
        return self._get_file(self.file_id)

    def refresh(self) -> int:
        """
        Asks the server how many bytes it holds (HEAD); answers the offset. While an earlier request that was cut off
        still holds the upload (423), asks again for up to ``lock_timeout`` seconds, then raises ``ConflictError``.
        """
        deadline = time.monotonic() + self.lock_timeout
        attempt = 0
        while True:
            try:
                head = self._http.send("HEAD", self.url, headers={"Tus-Resumable": TUS_VERSION})
                break
            except ConflictError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                time.sleep(min(backoff_seconds(attempt), LOCKED_BACKOFF_SECONDS, left))
                attempt += 1
        head.close()
        length = head.headers.get("upload-length")
        if length is not None and int(length) != self.size:
            raise ValueError(f"The upload at {self.url} is {length} bytes long, the source {self.size}: not the same file.")
        self.offset = int(head.headers["upload-offset"])
        self.file_id = head.headers.get("x-file-id") or None
        return self.offset

    def abort(self) -> None:
        """Deletes the upload and the bytes sent so far (tus termination); the reserved quota is given back."""
        self._http.send("DELETE", self.url, headers={"Tus-Resumable": TUS_VERSION}).close()


def _resumable(error: FileStorageError) -> bool:
    return error.status is None or error.status in RESUMABLE_STATUSES


def create_upload(
    http: HttpClient,
    source: OpenedSource,
    *,
    filename: str,
    name: str | None,
    folder_id: str | None,
    overwrite: bool | None,
    chunk_size: int,
    get_file: Callable[[str], FileObject],
    lock_timeout: float = LOCKED_TIMEOUT_SECONDS,
    idempotency_key: str | None = None,
) -> ResumableUpload:
    if source.size is None:
        raise ValueError("A resumable upload needs a source of known size (a path, bytes or a seekable file).")
    metadata = encode_metadata(
        {"filename": filename, "name": name, "folder_id": folder_id, "overwrite": None if overwrite is None else str(overwrite).lower()}
    )
    # Sent again with its key (a restarted process), the creation answers the same upload, to resume or already complete.
    headers = {"Tus-Resumable": TUS_VERSION, "Upload-Length": str(source.size), "Upload-Metadata": metadata}
    created = http.send("POST", "/v1/uploads", headers=headers, idempotency_key=idempotency_key)
    created.close()
    location = created.headers.get("location")
    if not location:
        raise InvalidResponseError("The tus endpoint answered without a Location.", code="invalid_response", status=created.status, headers=created.headers)
    upload = ResumableUpload(http, source, location, int(created.headers.get("upload-offset") or 0), chunk_size, get_file, lock_timeout)
    if created.headers.get("idempotent-replayed") == "true":
        upload.refresh()  # an upload announced before: where it stands now, or its file when complete
    return upload


def resume_upload(
    http: HttpClient,
    source: OpenedSource,
    url: str,
    chunk_size: int,
    get_file: Callable[[str], FileObject],
    lock_timeout: float = LOCKED_TIMEOUT_SECONDS,
) -> ResumableUpload:
    upload = ResumableUpload(http, source, url, 0, chunk_size, get_file, lock_timeout)
    upload.refresh()
    return upload
