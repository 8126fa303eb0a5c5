"""The API's resources, each hanging off the client: ``client.files``, ``client.trash``, ``client.folders``…"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, Union
from urllib.parse import quote, unquote, urlsplit

from ._http import HttpClient, Response
from ._source import ProgressCallback, UploadSource, multipart_body, open_source
from ._tus import ResumableUpload, create_upload, resume_upload
from .errors import InvalidRequestError, NotFoundError
from .types import (
    ApiKey,
    BulkDeleteResult,
    CreatedApiKey,
    CreatedWebhook,
    CursorPage,
    DeletedFile,
    DeletedFolder,
    DeletedWebhook,
    EmptiedTrash,
    Event,
    EventPage,
    FileObject,
    Folder,
    Page,
    PublicShare,
    ReplayQueued,
    RestoredFile,
    RevokedApiKey,
    RevokedShare,
    RotatedWebhookSecret,
    Share,
    ShareStatus,
    TrashedFile,
    UserInfo,
    Webhook,
    WebhookDelivery,
)

#: Where ``download_to`` writes: a path, or a binary file object open for writing.
Destination = Union[str, "os.PathLike[str]", IO[bytes]]


def _path(template: str, **ids: str) -> str:
    """``_path("/v1/files/{file_id}", file_id=...)``: each id checked (``_assert_id``), then percent-encoded."""
    for field, value in ids.items():
        _assert_id(value, field)
    return template.format(**{field: quote(value, safe="") for field, value in ids.items()})


def _invalid(field: str, problem: str) -> InvalidRequestError:
    """The error the server would answer for a bad field, raised here before any request is sent."""
    return InvalidRequestError(f"Request validation failed: {field}: {problem}", code="invalid_request", details={"fields": [{"field": field, "message": problem}]})


def _assert_id(value: object, field: str) -> None:
    """
    An id as the API gives them (``file_…``) names one resource. An empty one, ``.`` or ``..``, or one with ``/``,
    ``?`` or ``#``, would send the request to another route (the listing, the parent) or a path a proxy rewrites: it
    is refused here, before sending, instead of ending in a confusing 404 or another route's answer.
    """
    if not isinstance(value, str) or value in ("", ".", "..") or any(char in value for char in "/?#"):
        raise _invalid(field, f"must be an id as the API gives it (not empty, . or .., and without /, ? or #), not {value!r}")


def _assert_well_formed(name: str, field: str) -> None:
    """
    The server refuses a name with a surrogate code point (it cannot be stored as UTF-8; os.listdir gives such names
    for file names that are not UTF-8): refused here the same way, before sending, instead of a UnicodeEncodeError.
    """
    if any("\ud800" <= char <= "\udfff" for char in name):
        raise _invalid(field, "must be well-formed Unicode (no surrogate, U+D800 to U+DFFF)")


def _fetch_page(http: HttpClient, path: str, query: Mapping[str, Any]) -> Page[Any]:
    envelope = http.envelope("GET", path, query=query)
    return Page(data=envelope["data"], pagination=envelope["pagination"])


def _fetch_cursor_page(http: HttpClient, path: str, query: Mapping[str, Any]) -> CursorPage[Any]:
    envelope = http.envelope("GET", path, query=query)
    return CursorPage(data=envelope["data"], pagination=envelope["pagination"])


def _paginate(http: HttpClient, path: str, query: Mapping[str, Any]) -> Iterator[Any]:
    """
    Every item of a listing, from the page ``query`` names (its ``page``, its ``cursor``, or the first) to the last.
    Where the server answers ``pagination.next_cursor`` the walk follows the cursors, which never repeat or skip an
    item while others add and delete items; otherwise it counts pages.
    """
    filters = {key: value for key, value in query.items() if key not in ("page", "cursor")}
    page_query = dict(query)
    page_number = query.get("page") or 1
    while True:
        result = _fetch_page(http, path, page_query)
        yield from result.data
        pagination: dict[str, Any] = dict(result.pagination)
        if "next_cursor" in pagination:
            if not pagination["next_cursor"]:
                return
            # The server refuses `page` together with `cursor`: after the first page only the cursor says where.
            page_query = {**filters, "cursor": pagination["next_cursor"]}
            continue
        if not result.data or page_number >= pagination["total_pages"]:
            return
        page_number += 1
        page_query = {**filters, "page": page_number}


def _range_header(start: int | None, end: int | None) -> dict[str, str]:
    """
    The Range header of bytes ``start`` to ``end`` inclusive (``end`` None: to the end of the file; a negative
    ``start``: the last ``-start`` bytes), or none without ``start``.
    """
    if start is None:
        if end is not None:
            raise ValueError("A range needs start= (end= alone says nothing about where it begins).")
        return {}
    if start < 0:
        if end is not None:
            raise ValueError("A negative start= takes the last bytes of the file; it takes no end=.")
        return {"Range": f"bytes={start}"}
    if end is not None and end < 0:
        raise ValueError("end= is the index of the last byte wanted: 0 or more.")
    return {"Range": f"bytes={start}-{'' if end is None else end}"}


def _write_to(response: Response, destination: Destination) -> int:
    """
    Writes an answer's body to a file object, or to a path. Answers the size. A download that fails or is cut off
    raises (``APIConnectionError``), and the file it wrote at a path is removed: no partial file is left behind.
    """
    written = 0
    if hasattr(destination, "write"):
        with response:
            for chunk in response.iter_bytes():
                destination.write(chunk)
                written += len(chunk)
        return written
    path = os.fspath(destination)
    with response:
        file = open(path, "wb")
        try:
            with file:
                for chunk in response.iter_bytes():
                    file.write(chunk)
                    written += len(chunk)
        except BaseException:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            raise
    return written


class Files:
    def __init__(self, http: HttpClient, *, resumable_threshold: int, chunk_size: int, upload_lock_timeout: float) -> None:
        self._http = http
        self._resumable_threshold = resumable_threshold
        self._chunk_size = chunk_size
        self._upload_lock_timeout = upload_lock_timeout

    def upload(
        self,
        source: UploadSource,
        *,
        name: str | None = None,
        folder_id: str | None = None,
        overwrite: bool | None = None,
        on_progress: ProgressCallback | None = None,
        idempotency_key: str | None = None,
        resumable_threshold: int | None = None,
    ) -> FileObject:
        """
        Uploads a file, streamed: from a path, a binary file object or bytes. A source of known size at or above the
        resumable threshold goes through the tus endpoint in chunks, resuming after failures; anything else is one
        multipart request. Only a source that can be read again (a path, bytes, a seekable file) is retried.
        """
        opened = open_source(source)
        filename = name or opened.name
        if not filename:
            raise ValueError("upload() needs name= when the source is bytes or a file object without a name.")
        _assert_well_formed(filename, "name" if name else "filename")
        threshold = self._resumable_threshold if resumable_threshold is None else resumable_threshold
        if opened.replayable and opened.size is not None and opened.size > 0 and opened.size >= threshold:
            upload = create_upload(
                self._http,
                opened,
                filename=filename,
                name=name,
                folder_id=folder_id,
                overwrite=overwrite,
                chunk_size=self._chunk_size,
                get_file=self.get,
                lock_timeout=self._upload_lock_timeout,
                idempotency_key=idempotency_key,
            )
            return upload.send(on_progress)
        fields = {"folder_id": folder_id, "name": name, "overwrite": None if overwrite is None else str(overwrite).lower()}
        body = multipart_body(opened, filename, fields, on_progress)
        return self._http.data("POST", "/v1/files/upload", body=body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def list(self, **query: Any) -> CursorPage[FileObject]:
        """
        One page of the files of a folder (the root by default): ``folder_id``, ``page``, ``per_page``, ``sort``, ``type``,
        ``search``, and ``cursor`` (the ``pagination["next_cursor"]`` of the page before, with the same filters).
        """
        return _fetch_cursor_page(self._http, "/v1/files", query)

    def list_all(self, **query: Any) -> Iterator[FileObject]:
        """Every file of a folder, fetching page after page: ``for file in client.files.list_all(sort="name_asc")``."""
        return _paginate(self._http, "/v1/files", query)

    def get(self, file_id: str) -> FileObject:
        return self._http.data("GET", _path("/v1/files/{file_id}", file_id=file_id))  # type: ignore[no-any-return]

    def update(self, file_id: str, **changes: Any) -> FileObject:
        """Renames (``name=``) and/or moves (``folder_id=``; None moves it to the root) a file."""
        return self._http.data("PATCH", _path("/v1/files/{file_id}", file_id=file_id), json=changes)  # type: ignore[no-any-return]

    def delete(self, file_id: str, *, permanent: bool | None = None) -> DeletedFile:
        """Moves a file to the trash, or with ``permanent=True`` (an elevated key) deletes it for good."""
        return self._http.data("DELETE", _path("/v1/files/{file_id}", file_id=file_id), query={"permanent": permanent})  # type: ignore[no-any-return]

    def bulk_delete(self, file_ids: Sequence[str], *, idempotency_key: str | None = None) -> BulkDeleteResult:
        return self._http.data("POST", "/v1/files/bulk-delete", json={"file_ids": [*file_ids]}, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def restore(self, file_id: str, *, idempotency_key: str | None = None) -> RestoredFile:
        return self._http.data("POST", _path("/v1/files/{file_id}/restore", file_id=file_id), idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def download(self, file_id: str, *, start: int | None = None, end: int | None = None) -> Response:
        """
        The file's content as a stream: ``with client.files.download(id) as content: for chunk in content.iter_bytes(): …``
        (or ``content.read()``). Close it when done. With ``start`` (and ``end``), only bytes ``start`` to ``end``
        inclusive, as HTTP Range counts them (``end`` None: to the end; a negative ``start``: the last ``-start``
        bytes), answered 206 with a ``content-range`` header; a range past the end raises ``InvalidRequestError`` (416).
        """
        return self._signed_content(file_id, "download", _range_header(start, end))

    def download_to(self, file_id: str, destination: Destination, *, start: int | None = None, end: int | None = None) -> int:
        """
        Writes the file's content (or bytes ``start`` to ``end``, as ``download`` takes them) to a path or a binary file
        object, streamed. Answers the number of bytes. Raises ``APIConnectionError`` when the download is cut off
        (``APITimeoutError`` when it stalls); a path is then removed.
        """
        return _write_to(self.download(file_id, start=start, end=end), destination)

    def thumbnail(self, file_id: str) -> Response:
        """
        The file's thumbnail, a WebP of at most 256 x 256, as a stream (close it when done). Images, videos and PDFs get
        one shortly after their upload (a background job); until then, and for other types, raises ``NotFoundError``.
        """
        return self._signed_content(file_id, "thumbnail", {})

    def thumbnail_to(self, file_id: str, destination: Destination) -> int:
        """Writes the file's thumbnail (WebP) to a path or a binary file object, as ``download_to`` does the content."""
        return _write_to(self.thumbnail(file_id), destination)

    def _signed_content(self, file_id: str, route: str, range_header: dict[str, str]) -> Response:
        # These routes take a signed link, not the key: the file's fresh download_url / thumbnail_url is that link. Its
        # signature goes to the route under this client's base_url, which may differ from the server's public address
        # (and its path prefix from PUBLIC_BASE_URL's).
        # A continuation after a cut takes a fresh link too: a long download (gigabytes over a slow line) outlives its
        # link's hour.
        def signed_path() -> str:
            file = self.get(file_id)
            link = file["download_url"] if route == "download" else file.get("thumbnail_url")
            if link is None:
                raise NotFoundError(f"File {file_id} has no thumbnail (not yet made, or its type gets none)", code="not_found", status=404)
            signature = urlsplit(link).query
            path = _path("/v1/files/{file_id}/" + route, file_id=file_id)
            return f"{path}?{signature}" if signature else path

        return self._http.download(signed_path, headers={"Accept": "*/*", **range_header})


class Uploads:
    """Resumable uploads (tus 1.0) for large files, when you want to keep the upload's url and resume it yourself."""

    def __init__(self, http: HttpClient, files: Files, *, chunk_size: int, upload_lock_timeout: float) -> None:
        self._http = http
        self._files = files
        self._chunk_size = chunk_size
        self._upload_lock_timeout = upload_lock_timeout

    def create(
        self,
        source: UploadSource,
        *,
        name: str | None = None,
        folder_id: str | None = None,
        overwrite: bool | None = None,
        chunk_size: int | None = None,
        idempotency_key: str | None = None,
    ) -> ResumableUpload:
        """
        Announces an upload of the source (its size must be known); ``send()`` on the answer uploads the bytes. Announced
        again with the same ``idempotency_key``, it answers the same upload, at the server's offset.
        """
        opened = open_source(source)
        filename = name or opened.name
        if not filename:
            raise ValueError("create() needs name= when the source is bytes or a file object without a name.")
        _assert_well_formed(filename, "name" if name else "filename")
        return create_upload(
            self._http,
            opened,
            filename=filename,
            name=name,
            folder_id=folder_id,
            overwrite=overwrite,
            chunk_size=chunk_size or self._chunk_size,
            get_file=self._files.get,
            lock_timeout=self._upload_lock_timeout,
            idempotency_key=idempotency_key,
        )

    def resume(self, url: str, source: UploadSource, *, chunk_size: int | None = None) -> ResumableUpload:
        """The upload at ``url`` (from an earlier ``create``), with the server's offset; ``send()`` sends the rest."""
        return resume_upload(self._http, open_source(source), url, chunk_size or self._chunk_size, self._files.get, self._upload_lock_timeout)


class Trash:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def list(self, **query: Any) -> CursorPage[TrashedFile]:
        """One page of the trash: ``page``, ``per_page``, ``sort``, ``search``, ``cursor``."""
        return _fetch_cursor_page(self._http, "/v1/trash", query)

    def list_all(self, **query: Any) -> Iterator[TrashedFile]:
        return _paginate(self._http, "/v1/trash", query)

    def empty(self) -> EmptiedTrash:
        """Deletes every file in the trash for good (an elevated key)."""
        return self._http.data("DELETE", "/v1/trash")  # type: ignore[no-any-return]


class Folders:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create(self, name: str, *, parent_id: str | None = None, idempotency_key: str | None = None) -> Folder:
        body: dict[str, Any] = {"name": name}
        if parent_id is not None:
            body["parent_id"] = parent_id
        return self._http.data("POST", "/v1/folders", json=body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def list(self, **query: Any) -> CursorPage[Folder]:
        """One page of the folders of a folder (the root by default): ``parent_id``, ``page``, ``per_page``, ``sort``, ``search``, ``cursor``."""
        return _fetch_cursor_page(self._http, "/v1/folders", query)

    def list_all(self, **query: Any) -> Iterator[Folder]:
        return _paginate(self._http, "/v1/folders", query)

    def get(self, folder_id: str) -> Folder:
        """One folder; following ``parent_id`` up to None gives its path from the root."""
        return self._http.data("GET", _path("/v1/folders/{folder_id}", folder_id=folder_id))  # type: ignore[no-any-return]

    def update(self, folder_id: str, **changes: Any) -> Folder:
        """Renames (``name=``) and/or moves (``parent_id=``; None moves it to the root) a folder."""
        return self._http.data("PATCH", _path("/v1/folders/{folder_id}", folder_id=folder_id), json=changes)  # type: ignore[no-any-return]

    def delete(self, folder_id: str) -> DeletedFolder:
        """Moves the folder and everything in it to the trash."""
        return self._http.data("DELETE", _path("/v1/folders/{folder_id}", folder_id=folder_id))  # type: ignore[no-any-return]


def _share_token(url_or_token: str) -> str:
    """
    The token of a share url (its last path segment) or the token itself, percent-encoded as one path segment. A token
    is whatever a visitor pasted, so it is sent as it is, ``.`` and ``..`` encoded too (a proxy would resolve them as
    the parent path), and the server answers not found for one it never gave; only an empty one is refused.
    """
    token = url_or_token
    if url_or_token.startswith(("http://", "https://")):
        token = unquote(next((part for part in reversed(urlsplit(url_or_token).path.split("/")) if part), ""))
    if not token:
        raise _invalid("url_or_token", f"must be a share url or its token, not {url_or_token!r}")
    return quote(token, safe="") if token not in (".", "..") else token.replace(".", "%2E")


def _password_header(password: str | None) -> dict[str, str]:
    # The header carries the password's UTF-8 bytes, as the server reads it: http.client sends str values as Latin-1.
    return {} if password is None else {"X-Share-Password": password.encode("utf-8").decode("latin-1")}


class Shares:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create(self, file_id: str, *, password: str | None = None, expires_in: int | None = None, idempotency_key: str | None = None) -> Share:
        """A share link of the file; ``expires_in`` is in seconds (60 to 31,536,000)."""
        body: dict[str, Any] = {"file_id": file_id}
        if password is not None:
            body["password"] = password
        if expires_in is not None:
            body["expires_in"] = expires_in
        return self._http.data("POST", "/v1/shares", json=body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def list(self, **query: Any) -> CursorPage[ShareStatus]:
        """One page of the account's links (``file_id=`` filters), each with its status and analytics as ``get`` answers it."""
        return _fetch_cursor_page(self._http, "/v1/shares", query)

    def list_all(self, **query: Any) -> Iterator[ShareStatus]:
        return _paginate(self._http, "/v1/shares", query)

    def get(self, share_id: str) -> ShareStatus:
        """One share link with its status and analytics (``active``, ``revoked_at``, ``access_count``, ...); revoked and expired links too."""
        return self._http.data("GET", _path("/v1/shares/{share_id}", share_id=share_id))  # type: ignore[no-any-return]

    def revoke(self, share_id: str) -> RevokedShare:
        return self._http.data("DELETE", _path("/v1/shares/{share_id}", share_id=share_id))  # type: ignore[no-any-return]

    def open(self, url_or_token: str, *, password: str | None = None) -> PublicShare:
        """What a share link shows its visitor, without an API key. Takes the share's url or its token."""
        return self._http.data("GET", "/s/" + _share_token(url_or_token), anonymous=True, headers=_password_header(password))  # type: ignore[no-any-return]

    def download(self, url_or_token: str, *, password: str | None = None, start: int | None = None, end: int | None = None) -> Response:
        """
        The shared file's content as a visitor downloads it, without an API key, as a stream (close it when done); with
        ``start`` and ``end``, only those bytes, as ``files.download`` takes them.
        """
        headers = {"Accept": "*/*", **_password_header(password), **_range_header(start, end)}
        return self._http.download("/s/" + _share_token(url_or_token) + "/download", headers=headers)

    def download_to(
        self, url_or_token: str, destination: Destination, *, password: str | None = None, start: int | None = None, end: int | None = None
    ) -> int:
        return _write_to(self.download(url_or_token, password=password, start=start, end=end), destination)


def _iso(moment: datetime.datetime | str) -> str:
    """An ISO 8601 UTC time with milliseconds, as the API writes them; a naive datetime is taken as UTC."""
    if isinstance(moment, str):
        return moment
    aware = moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)
    return aware.astimezone(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Webhooks:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create(
        self, url: str, events: Sequence[str], *, secret: str | None = None, active: bool | None = None, idempotency_key: str | None = None
    ) -> CreatedWebhook:
        """Registers a webhook; the answer shows its signing secret this once."""
        body: dict[str, Any] = {"url": url, "events": [*events]}
        if secret is not None:
            body["secret"] = secret
        if active is not None:
            body["active"] = active
        return self._http.data("POST", "/v1/webhooks", json=body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def list(self, **query: Any) -> Page[Webhook]:
        return _fetch_page(self._http, "/v1/webhooks", query)

    def list_all(self, **query: Any) -> Iterator[Webhook]:
        return _paginate(self._http, "/v1/webhooks", query)

    def get(self, webhook_id: str) -> Webhook:
        return self._http.data("GET", _path("/v1/webhooks/{webhook_id}", webhook_id=webhook_id))  # type: ignore[no-any-return]

    def update(self, webhook_id: str, **changes: Any) -> Webhook:
        """Changes ``events=`` and/or ``active=``."""
        return self._http.data("PATCH", _path("/v1/webhooks/{webhook_id}", webhook_id=webhook_id), json=changes)  # type: ignore[no-any-return]

    def delete(self, webhook_id: str) -> DeletedWebhook:
        return self._http.data("DELETE", _path("/v1/webhooks/{webhook_id}", webhook_id=webhook_id))  # type: ignore[no-any-return]

    def rotate_secret(self, webhook_id: str, *, expires_in: int | None = None, idempotency_key: str | None = None) -> RotatedWebhookSecret:
        """
        Replaces the webhook's signing secret; the answer shows the new one this once. For ``expires_in`` seconds
        (default 86400, 0 to 604800) deliveries are signed with the old and the new secret, then with the new one only.
        """
        body = {} if expires_in is None else {"expires_in": expires_in}
        return self._http.data("POST", _path("/v1/webhooks/{webhook_id}/rotate-secret", webhook_id=webhook_id), json=body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def replay(
        self,
        webhook_id: str,
        *,
        since: datetime.datetime | str,
        until: datetime.datetime | str | None = None,
        idempotency_key: str | None = None,
    ) -> ReplayQueued:
        """
        Delivers again every retained event in [since, until) (until defaults to now) that the webhook subscribes to:
        new delivery ids, the same event ids. Answers how many were queued (``queued``).
        """
        body = {"since": _iso(since)}
        if until is not None:
            body["until"] = _iso(until)
        return self._http.data("POST", _path("/v1/webhooks/{webhook_id}/replay", webhook_id=webhook_id), json=body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def test(self, webhook_id: str, *, idempotency_key: str | None = None) -> WebhookDelivery:
        """Sends a ``webhook.test`` event to the webhook; answers the queued delivery."""
        return self._http.data("POST", _path("/v1/webhooks/{webhook_id}/test", webhook_id=webhook_id), idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def deliveries(self, webhook_id: str, **query: Any) -> CursorPage[WebhookDelivery]:
        """One page of the delivery log, newest first (``status=`` pending, succeeded or failed)."""
        return _fetch_cursor_page(self._http, _path("/v1/webhooks/{webhook_id}/deliveries", webhook_id=webhook_id), query)

    def all_deliveries(self, webhook_id: str, **query: Any) -> Iterator[WebhookDelivery]:
        return _paginate(self._http, _path("/v1/webhooks/{webhook_id}/deliveries", webhook_id=webhook_id), query)

    def delivery(self, webhook_id: str, delivery_id: str) -> WebhookDelivery:
        return self._http.data("GET", _path("/v1/webhooks/{webhook_id}/deliveries/{delivery_id}", webhook_id=webhook_id, delivery_id=delivery_id))  # type: ignore[no-any-return]

    def redeliver(self, webhook_id: str, delivery_id: str, *, idempotency_key: str | None = None) -> WebhookDelivery:
        """Sends a finished delivery again (same delivery id); answers the delivery, queued."""
        return self._http.data(  # type: ignore[no-any-return]
            "POST", _path("/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", webhook_id=webhook_id, delivery_id=delivery_id), idempotency_key=idempotency_key
        )


class ApiKeys:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create(self, name: str, scopes: Sequence[str], *, elevated: bool | None = None, idempotency_key: str | None = None) -> CreatedApiKey:
        """Creates a key; the answer shows the key itself (``api_key``) this once."""
        body: dict[str, Any] = {"name": name, "scopes": [*scopes]}
        if elevated is not None:
            body["elevated"] = elevated
        return self._http.data("POST", "/v1/api-keys", json=body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def list(self, **query: Any) -> Page[ApiKey]:
        return _fetch_page(self._http, "/v1/api-keys", query)

    def list_all(self, **query: Any) -> Iterator[ApiKey]:
        return _paginate(self._http, "/v1/api-keys", query)

    def revoke(self, key_id: str) -> RevokedApiKey:
        return self._http.data("DELETE", _path("/v1/api-keys/{key_id}", key_id=key_id))  # type: ignore[no-any-return]


class User:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def info(self) -> UserInfo:
        """The account, its plan, storage use and limits, and the calling key."""
        return self._http.data("GET", "/v1/user/info")  # type: ignore[no-any-return]


class EventStream:
    """
    Iterates the event feed from a cursor: every event after it, page after page. It stops once caught up, unless
    ``follow=True`` (then it long-polls for new events forever). ``cursor`` is where to continue next time: after the
    last page read to its end, or to the event a loop stopped at when that was its page's last (a loop left in the
    middle of a page resumes at that page's start, repeating its events).
    """

    def __init__(self, events: Events, *, after: str | None, types: Sequence[str] | None, limit: int | None, follow: bool, wait: int) -> None:
        self._events = events
        self.cursor = after
        self._types = types
        self._limit = limit
        self._follow = follow
        self._wait = wait

    def __iter__(self) -> Iterator[Event]:
        while True:
            page = self._events.list(after=self.cursor, types=self._types, limit=self._limit, wait=self._wait if self._follow else None)
            for index, event in enumerate(page.data):
                # Moved before the page's last event is handed out, so a loop that stops at it resumes after it.
                if index == len(page.data) - 1:
                    self.cursor = page.next_cursor
                yield event
            self.cursor = page.next_cursor
            if not page.data and not self._follow:
                return
            if not page.data:
                time.sleep(0.1)  # a long poll that timed out empty: ask again at once, gently


class Events:
    """The account's event feed (``GET /v1/events``), oldest first, read with a cursor."""

    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def list(self, *, after: str | None = None, limit: int | None = None, types: Sequence[str] | None = None, wait: int | None = None) -> EventPage:
        """
        One batch of events after the cursor ``after`` (from the oldest retained event without it); ``types`` filters
        by event name; ``wait`` (0–30 s) holds the request open until an event arrives. Pass the answer's
        ``next_cursor`` as ``after`` next time. A cursor older than the retention raises CursorExpiredError.
        """
        envelope = self._http.envelope("GET", "/v1/events", query={"after": after, "limit": limit, "types": types, "wait": wait})
        return EventPage(data=envelope["data"], next_cursor=envelope["next_cursor"])

    def stream(self, *, after: str | None = None, types: Sequence[str] | None = None, limit: int | None = None, follow: bool = False, wait: int = 30) -> EventStream:
        """``for event in client.events.stream(after=saved)``: every event since the cursor; see EventStream."""
        return EventStream(self, after=after, types=types, limit=limit, follow=follow, wait=wait)

    def tail(self, *, after: str | None = None, types: Sequence[str] | None = None, limit: int | None = None, wait: int = 30) -> EventStream:
        """Every event from the cursor on, as they happen (long polls of ``wait`` seconds); iterating never ends."""
        return self.stream(after=after, types=types, limit=limit, follow=True, wait=wait)
