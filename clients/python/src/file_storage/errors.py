"""Typed errors: one class per error code of the API, each carrying code, message, details, status and request id."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any


class FileStorageError(Exception):
    """Every error the client raises for an answer of the server, or for a failed exchange with it."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None = None,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        #: The envelope's error code, e.g. ``not_found``; ``connection_error`` or ``timeout`` when no answer arrived.
        self.code = code
        #: The HTTP status, or None when no answer arrived.
        self.status = status
        self.details: dict[str, Any] = details or {}
        #: The X-Request-Id of the answer: quote it when asking for support.
        self.request_id = request_id
        self.headers: dict[str, str] = {key.lower(): value for key, value in (headers or {}).items()}

    @property
    def retry_after(self) -> float | None:
        """
        Seconds the server asked to wait before trying again (its Retry-After), on a 429, a 503 or a 409
        ``idempotency_key_in_use``: raised at once when longer than the client waits by itself (120 s), to schedule it.
        """
        return parse_retry_after(self.headers.get("retry-after"))

    def __str__(self) -> str:
        where = f" (HTTP {self.status}, request {self.request_id})" if self.status is not None else ""
        return f"{self.code}: {self.message}{where}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, message={self.message!r}, request_id={self.request_id!r})"


class InvalidRequestError(FileStorageError):
    """400: the request was malformed; ``details["fields"]`` names the fields."""


class AuthenticationError(FileStorageError):
    """401: the API key is missing, malformed, unknown or revoked."""


class PermissionDeniedError(FileStorageError):
    """403: the key lacks the scope (or elevation) the operation needs."""


class NotFoundError(FileStorageError):
    """404: no such resource in this account (or no such route on this server)."""


class ConflictError(FileStorageError):
    """409 / 423: the resource is in a state that does not allow the operation (e.g. a tus upload in use)."""


class IdempotencyError(FileStorageError):
    """
    The same Idempotency-Key was sent with a different request (422), or its first request still ran after every retry
    (409 ``idempotency_key_in_use``; the client waits Retry-After and retries that one by itself).
    """


class RateLimitError(FileStorageError):
    """429: too many requests; ``retry_after`` says how many seconds to wait."""


class FileTooLargeError(FileStorageError):
    """413: the file exceeds the plan's maximum size."""

    @property
    def file_size(self) -> int | None:
        return self.details.get("file_size")

    @property
    def max_size(self) -> int | None:
        return self.details.get("max_size")

    @property
    def plan(self) -> str | None:
        return self.details.get("plan")


class StorageExceededError(FileStorageError):
    """413: the upload does not fit the account's remaining storage."""

    @property
    def current_usage(self) -> int | None:
        return self.details.get("current_usage")

    @property
    def storage_limit(self) -> int | None:
        return self.details.get("storage_limit")

    @property
    def required_space(self) -> int | None:
        return self.details.get("required_space")


class ShareExpiredError(FileStorageError):
    """410: the share link is past its expiry."""


class CursorExpiredError(FileStorageError):
    """410: the event feed cursor is older than the feed's retention; start again without ``after``."""


class PasswordRequiredError(FileStorageError):
    """401 on a share link: the password is missing or wrong."""


class FileInfectedError(FileStorageError):
    """403: the file was quarantined by the virus scanner."""


class ServiceUnavailableError(FileStorageError):
    """503: a dependency of the service is unavailable; retried automatically."""


class InternalServerError(FileStorageError):
    """500: an unexpected failure of the service; quote ``request_id``."""


class APIConnectionError(FileStorageError):
    """No answer arrived: the connection failed or was cut."""


class APITimeoutError(APIConnectionError):
    """No answer arrived within the client's ``timeout``."""


class InvalidResponseError(FileStorageError):
    """
    An answer that is not what the API sends: a body that is not the JSON expected (a captive portal's or a proxy's
    HTML page), a tus creation without Location. ``message`` quotes the start of the body.
    """


class WebhookSignatureError(FileStorageError):
    """A webhook delivery whose signature does not match its body and the secret."""


_ERROR_CLASSES: dict[str, type[FileStorageError]] = {
    "invalid_request": InvalidRequestError,
    "authentication_failed": AuthenticationError,
    "permission_denied": PermissionDeniedError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "idempotency_key_in_use": IdempotencyError,
    "idempotency_key_reused": IdempotencyError,
    "rate_limit_exceeded": RateLimitError,
    "file_too_large": FileTooLargeError,
    "storage_exceeded": StorageExceededError,
    "share_expired": ShareExpiredError,
    "cursor_expired": CursorExpiredError,
    "password_required": PasswordRequiredError,
    "file_infected": FileInfectedError,
    "service_unavailable": ServiceUnavailableError,
    "internal_error": InternalServerError,
}

# Answers without an envelope (a proxy's 502, say) still get the class their status implies.
_CODE_FOR_STATUS = {
    400: "invalid_request",
    401: "authentication_failed",
    403: "permission_denied",
    404: "not_found",
    409: "conflict",
    410: "not_found",
    423: "conflict",
    429: "rate_limit_exceeded",
    503: "service_unavailable",
}


def error_from_response(status: int, reason: str, headers: Mapping[str, str], body: bytes) -> FileStorageError:
    """The typed error for a failed answer; reads the error envelope when there is one."""
    lowered = {key.lower(): value for key, value in headers.items()}
    error: dict[str, Any] = {}
    try:
        parsed = json.loads(body.decode("utf-8")) if body else None
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            error = parsed["error"]
    except (UnicodeDecodeError, ValueError):
        pass
    code = error.get("code") or _CODE_FOR_STATUS.get(status) or ("internal_error" if status >= 500 else "http_error")
    message = error.get("message") or f"HTTP {status} {reason}".strip()
    details = error.get("details") if isinstance(error.get("details"), dict) else None
    error_class = _ERROR_CLASSES.get(code, FileStorageError)
    return error_class(message, code=code, status=status, details=details, request_id=lowered.get("x-request-id"), headers=lowered)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After in seconds, from either of its forms (delta-seconds or an HTTP date)."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
