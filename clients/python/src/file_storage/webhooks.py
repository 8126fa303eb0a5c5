"""
Verifying webhook deliveries: ``X-Service-Signature`` is ``sha256=`` + hex HMAC-SHA256 of the raw body; servers that
also send Standard Webhooks headers (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``) can be checked
with ``verify_standard_webhook``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Union

from .errors import WebhookSignatureError

SIGNATURE_HEADER = "X-Service-Signature"
_SIGNATURE = re.compile(r"sha256=([0-9a-f]{64})")

#: The request's headers: a dict, http.server's ``self.headers``, or just the X-Service-Signature value.
Headers = Union[Mapping[str, str], str, None]


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    for key, item in headers.items():
        if key.lower() == name.lower():
            return item
    return None


def _signature_header(headers: Headers) -> str | None:
    if headers is None or isinstance(headers, str):
        return headers
    return _header(headers, SIGNATURE_HEADER)


def verify_webhook_signature(raw_body: bytes | str, headers: Headers, secret: str) -> bool:
    """
    Whether a webhook delivery is genuine: its ``X-Service-Signature`` header must be ``sha256=`` + the hex
    HMAC-SHA256 of the raw request body, keyed with the webhook's secret. Pass the body exactly as received, before
    parsing it. The comparison runs in constant time (``hmac.compare_digest``).
    """
    header = _signature_header(headers)
    if not header or not _SIGNATURE.fullmatch(header.strip()):
        return False
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    expected = "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), header.strip().encode("ascii"))


def parse_webhook(raw_body: bytes | str, headers: Headers, secret: str) -> dict[str, Any]:
    """The delivery's JSON body ``{event, timestamp, webhook_id, data, signature}`` once its signature is verified;
    raises WebhookSignatureError (answer 401) otherwise."""
    if not verify_webhook_signature(raw_body, headers, secret):
        raise WebhookSignatureError("The webhook signature does not match the body and the secret.", code="invalid_signature", status=401)
    parsed: dict[str, Any] = json.loads(raw_body)
    return parsed


_STANDARD_PREFIX = "whsec_"
# Canonical standard base64 with padding, as the Standard Webhooks libraries decode a whsec_ secret.
_CANONICAL_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _standard_key(secret: str) -> bytes:
    """A ``whsec_`` secret in canonical base64 of 24 to 64 bytes is keyed by those bytes; any other by its UTF-8 bytes."""
    if secret.startswith(_STANDARD_PREFIX) and _CANONICAL_BASE64.fullmatch(secret[len(_STANDARD_PREFIX) :]):
        decoded = base64.b64decode(secret[len(_STANDARD_PREFIX) :])
        if 24 <= len(decoded) <= 64:
            return decoded
    return secret.encode("utf-8")


def verify_standard_webhook(
    raw_body: bytes | str,
    headers: Mapping[str, str],
    secret: str | Sequence[str],
    *,
    tolerance_seconds: int = 300,
    now: float | None = None,
) -> bool:
    """
    Whether a delivery is genuine by its Standard Webhooks headers: one of the ``v1,`` signatures in
    ``webhook-signature`` must be the base64 HMAC-SHA256 of ``{webhook-id}.{webhook-timestamp}.{raw body}``, and
    ``webhook-timestamp`` within ``tolerance_seconds`` of ``now`` (Unix seconds, default the clock), so a captured
    delivery cannot be replayed later. Give the secret exactly as shown at creation or rotation; during a rotation,
    pass both as a list. Constant-time comparison (``hmac.compare_digest``).
    """
    delivery_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not delivery_id or not timestamp or not signatures or not re.fullmatch(r"\d{1,15}", timestamp):
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance_seconds:
        return False
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    message = f"{delivery_id}.{timestamp}.".encode() + body
    candidates: list[bytes] = []
    for signature in signatures.split(" "):
        if signature.startswith("v1,"):
            try:
                candidates.append(base64.b64decode(signature[3:], validate=True))
            except (binascii.Error, ValueError):
                continue
    for one in [secret] if isinstance(secret, str) else secret:
        expected = hmac.new(_standard_key(one), message, hashlib.sha256).digest()
        if any(hmac.compare_digest(expected, candidate) for candidate in candidates):
            return True
    return False
