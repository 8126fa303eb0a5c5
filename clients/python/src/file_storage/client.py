from __future__ import annotations

import ssl

from ._http import HttpClient
from ._tus import LOCKED_TIMEOUT_SECONDS
from .resources import ApiKeys, Events, Files, Folders, Shares, Trash, Uploads, User, Webhooks

MiB = 1024 * 1024


class FileStorage:
    """
    The File Storage Service API: one object per account key, every resource hanging off it.

    ``base_url`` is the server's address, with the path it is served under if any (``https://example.com/storage``):
    requests go to ``<base_url>/v1/...``. ``timeout`` is in seconds, per socket operation (connecting, and every wait
    for bytes), so long transfers are limited by inactivity, not total time. ``max_retries`` applies to 429 and 409
    ``idempotency_key_in_use`` (after Retry-After, up to 120 s: asked to wait longer, the error is raised at once with
    its ``retry_after``), 502, 503, 504 and connection errors. Files of at least ``resumable_threshold`` bytes go
    through the resumable tus endpoint in chunks of ``chunk_size``; after a failed chunk, while the request that was
    cut off still holds the upload at the server (423), the client waits up to ``upload_lock_timeout`` seconds for it.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        resumable_threshold: int = 64 * MiB,
        chunk_size: int = 8 * MiB,
        upload_lock_timeout: float = LOCKED_TIMEOUT_SECONDS,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        http = HttpClient(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries, ssl_context=ssl_context)
        self.files = Files(http, resumable_threshold=resumable_threshold, chunk_size=chunk_size, upload_lock_timeout=upload_lock_timeout)
        self.uploads = Uploads(http, self.files, chunk_size=chunk_size, upload_lock_timeout=upload_lock_timeout)
        self.trash = Trash(http)
        self.folders = Folders(http)
        self.shares = Shares(http)
        self.webhooks = Webhooks(http)
        self.api_keys = ApiKeys(http)
        self.user = User(http)
        self.events = Events(http)
