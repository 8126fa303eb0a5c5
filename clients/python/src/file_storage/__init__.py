"""Python client of the File Storage Service API (standard library only)."""

from ._http import Response
from ._source import ProgressCallback, UploadSource
from ._tus import ResumableUpload
from ._version import __version__
from .client import FileStorage
from .errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    ConflictError,
    CursorExpiredError,
    FileInfectedError,
    FileStorageError,
    FileTooLargeError,
    IdempotencyError,
    InternalServerError,
    InvalidRequestError,
    InvalidResponseError,
    NotFoundError,
    PasswordRequiredError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    ShareExpiredError,
    StorageExceededError,
    WebhookSignatureError,
)
from .resources import EventStream
from .types import CursorPage, EventPage, Page
from .webhooks import parse_webhook, verify_standard_webhook, verify_webhook_signature

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AuthenticationError",
    "ConflictError",
    "CursorExpiredError",
    "CursorPage",
    "EventPage",
    "EventStream",
    "FileInfectedError",
    "FileStorage",
    "FileStorageError",
    "FileTooLargeError",
    "IdempotencyError",
    "InternalServerError",
    "InvalidRequestError",
    "InvalidResponseError",
    "NotFoundError",
    "Page",
    "PasswordRequiredError",
    "PermissionDeniedError",
    "ProgressCallback",
    "RateLimitError",
    "Response",
    "ResumableUpload",
    "ServiceUnavailableError",
    "ShareExpiredError",
    "StorageExceededError",
    "UploadSource",
    "WebhookSignatureError",
    "__version__",
    "parse_webhook",
    "verify_standard_webhook",
    "verify_webhook_signature",
]
