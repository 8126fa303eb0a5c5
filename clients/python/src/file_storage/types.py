"""The shapes of the API's answers, as openapi.json states them (tests/test_types.py checks them against it)."""

# No `from __future__ import annotations` here: with string annotations, TypedDict on Python 3.11 cannot see
# NotRequired[...] and would mark every key required.

from dataclasses import dataclass
from typing import Any, Generic, Literal, NotRequired, TypedDict, TypeVar

Category = Literal["image", "video", "audio", "document", "archive", "other"]
Scope = Literal["read", "write", "delete", "share"]


class Pagination(TypedDict):
    page: int
    per_page: int
    total_items: int
    total_pages: int


class CursorPagination(Pagination):
    """The pagination of a listing that also pages by cursor: send ``next_cursor`` as ``cursor=``; None on the last page."""

    next_cursor: str | None


class FileObject(TypedDict):
    id: str
    name: str
    size: int
    type: str
    category: Category
    folder_id: str | None
    created_at: str
    modified_at: str
    thumbnail_url: NotRequired[str]
    download_url: str
    is_shared: NotRequired[bool]
    md5_hash: str
    scan_status: Literal["pending", "clean", "infected", "skipped"]


class DeletedFile(TypedDict):
    id: str
    name: str
    deleted_at: str
    recoverable_until: str | None


class RestoredFile(TypedDict):
    id: str
    name: str
    restored_at: str
    folder_id: str | None


class BulkDeleteFailure(TypedDict):
    id: str
    error: dict[str, str]


class BulkDeleteResult(TypedDict):
    deleted: list[str]
    failed: list[BulkDeleteFailure]
    total: int
    deleted_count: int
    failed_count: int


class Folder(TypedDict):
    id: str
    name: str
    parent_id: str | None
    created_by: str
    created_at: str
    modified_at: str


class DeletedFolder(TypedDict):
    id: str
    name: str
    deleted_at: str
    folders_deleted: int
    files_deleted: int


class TrashedFile(TypedDict):
    id: str
    name: str
    size: int
    type: str
    category: Category
    folder_id: str | None
    deleted_at: str
    recoverable_until: str


class EmptiedTrash(TypedDict):
    deleted_count: int
    freed_bytes: int


class Share(TypedDict):
    id: str
    url: str
    file_id: str
    password_protected: bool
    expires_at: str | None
    created_by: str
    created_at: str
    access_count: int


class ShareStatus(Share):
    """A share link as listings and ``shares.get`` show it: the created link plus its status and last access."""

    active: bool
    revoked_at: str | None
    invalidated_at: str | None
    last_accessed_at: str | None


class RevokedShare(TypedDict):
    id: str
    revoked: bool
    revoked_at: str


class PublicSharedFile(TypedDict):
    name: str
    size: int
    type: str


class PublicShare(TypedDict):
    file: PublicSharedFile
    expires_at: str | None
    password_protected: bool
    download_url: str


class ApiKey(TypedDict):
    id: str
    name: str
    key_prefix: str
    scopes: list[Scope]
    elevated: bool
    created_at: str
    last_used_at: str | None


class CreatedApiKey(ApiKey):
    api_key: str


class RevokedApiKey(TypedDict):
    id: str
    revoked: bool
    revoked_at: NotRequired[str]


class StorageUsage(TypedDict):
    used: int
    limit: int
    available: int
    percentage: float


class PlanLimits(TypedDict):
    requests_per_minute: int
    max_file_size: int


class CallingKey(TypedDict):
    id: str
    scopes: list[Scope]
    elevated: bool


class UserInfo(TypedDict):
    id: str
    account_id: str
    name: str
    plan: Literal["free", "pro", "enterprise"]
    created_at: str
    storage: StorageUsage
    limits: PlanLimits
    key: CallingKey
    scanning: Literal["active", "unavailable"]


class Webhook(TypedDict):
    id: str
    url: str
    events: list[str]
    active: bool
    created_at: str
    updated_at: str
    disabled_reason: str | None
    disabled_at: str | None
    previous_secret_expires_at: str | None


class CreatedWebhook(TypedDict):
    id: str
    url: str
    events: list[str]
    active: bool
    secret: str
    created_at: str


class RotatedWebhookSecret(TypedDict):
    id: str
    secret: str
    rotated_at: str
    previous_secret_expires_at: str | None


class ReplayQueued(TypedDict):
    queued: int


class DeletedWebhook(TypedDict):
    id: str
    deleted: bool


class DeliveryAttempt(TypedDict):
    attempt: int
    started_at: str
    duration_ms: int
    response_status: int | None
    error: str | None


class WebhookDelivery(TypedDict):
    id: str
    webhook_id: str
    event: str
    status: Literal["pending", "succeeded", "failed"]
    attempts: int
    created_at: str
    last_attempt_at: str | None
    next_attempt_at: str | None
    response_status: int | None
    error: str | None
    attempt_log: list[DeliveryAttempt]


class Event(TypedDict):
    """One event of the feed: the webhook delivery's envelope plus its stable id (``evt_…``)."""

    id: str
    event: str
    timestamp: str
    data: dict[str, Any]


T = TypeVar("T")


@dataclass
class Page(Generic[T]):
    """One page of a listing."""

    data: list[T]
    pagination: Pagination


@dataclass
class CursorPage(Page[T]):
    """
    One page of a listing that also pages by cursor (files, folders, trash, shares, deliveries): pass
    ``pagination["next_cursor"]`` as ``cursor=`` (with the same filters) for the next page, which never repeats or skips
    an item while others add and delete items.
    """

    pagination: CursorPagination


@dataclass
class EventPage:
    """One answer of the event feed; pass ``next_cursor`` as ``after`` to read on from there."""

    data: list[Event]
    next_cursor: str
