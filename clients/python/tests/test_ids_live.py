"""Ids that cannot name a resource are refused before any request; share tokens, which may be anything a visitor
pasted, are sent percent-encoded. Against the live server, through a proxy that records every request line."""

import io
import unittest
from collections.abc import Callable
from typing import Any

from conformance.support import TestProxy
from file_storage import FileStorage, InvalidRequestError, NotFoundError

from .live import API_KEY, BASE_URL, needs_server

# Each would end in another route (the listing for "", the parent for ".."), or a path a proxy rewrites.
BAD_IDS = ["", ".", "..", "a/b", "file?x=1", "file#top"]

CALLS: dict[str, Callable[[FileStorage, str], Any]] = {
    "files.get": lambda client, id: client.files.get(id),
    "files.update": lambda client, id: client.files.update(id, name="renamed.txt"),
    "files.delete": lambda client, id: client.files.delete(id),
    "files.restore": lambda client, id: client.files.restore(id),
    "files.download": lambda client, id: client.files.download(id),
    "files.download_to": lambda client, id: client.files.download_to(id, io.BytesIO()),
    "files.thumbnail": lambda client, id: client.files.thumbnail(id),
    "folders.get": lambda client, id: client.folders.get(id),
    "folders.update": lambda client, id: client.folders.update(id, name="Renamed"),
    "folders.delete": lambda client, id: client.folders.delete(id),
    "shares.get": lambda client, id: client.shares.get(id),
    "shares.revoke": lambda client, id: client.shares.revoke(id),
    "webhooks.get": lambda client, id: client.webhooks.get(id),
    "webhooks.update": lambda client, id: client.webhooks.update(id, active=False),
    "webhooks.delete": lambda client, id: client.webhooks.delete(id),
    "webhooks.test": lambda client, id: client.webhooks.test(id),
    "webhooks.rotate_secret": lambda client, id: client.webhooks.rotate_secret(id),
    "webhooks.replay": lambda client, id: client.webhooks.replay(id, since="2026-01-01T00:00:00.000Z"),
    "webhooks.deliveries": lambda client, id: client.webhooks.deliveries(id),
    "webhooks.all_deliveries": lambda client, id: list(client.webhooks.all_deliveries(id)),
    "webhooks.delivery (webhook)": lambda client, id: client.webhooks.delivery(id, "dlv_0"),
    "webhooks.delivery (delivery)": lambda client, id: client.webhooks.delivery("wh_0", id),
    "webhooks.redeliver (webhook)": lambda client, id: client.webhooks.redeliver(id, "dlv_0"),
    "webhooks.redeliver (delivery)": lambda client, id: client.webhooks.redeliver("wh_0", id),
    "api_keys.revoke": lambda client, id: client.api_keys.revoke(id),
}


@needs_server
class IdsThatCannotNameAResource(unittest.TestCase):
    def setUp(self) -> None:
        self.proxy = TestProxy(BASE_URL or "")
        self.addCleanup(self.proxy.close)
        self.client = FileStorage(API_KEY or "", self.proxy.url)

    def test_are_refused_with_invalid_request_error_before_any_request(self) -> None:
        for call, send in CALLS.items():
            for bad in BAD_IDS:
                with self.subTest(call=call, id=bad):
                    with self.assertRaises(InvalidRequestError) as raised:
                        send(self.client, bad)
                    self.assertEqual((raised.exception.code, raised.exception.status), ("invalid_request", None))
                    [field] = raised.exception.details["fields"]
                    self.assertRegex(field["field"], r"^(file|folder|share|webhook|delivery|key)_id$")
        self.assertEqual(self.proxy.requests, [])

    def test_a_share_token_is_sent_percent_encoded_and_an_unknown_one_is_not_found(self) -> None:
        for token, sent in ((".", "%2E"), ("..", "%2E%2E"), ("a/b?c#d", "a%2Fb%3Fc%23d")):
            with self.subTest(token=token):
                with self.assertRaises(NotFoundError):
                    self.client.shares.open(token)
                with self.assertRaises(NotFoundError):
                    self.client.shares.download(token)
                self.assertEqual(self.proxy.requests[-2:], [f"GET /s/{sent}", f"GET /s/{sent}/download"])

    def test_an_empty_share_token_is_refused_before_any_request(self) -> None:
        for url_or_token in ("", "https://files.example.com/"):
            with self.subTest(url_or_token=url_or_token):
                with self.assertRaises(InvalidRequestError):
                    self.client.shares.open(url_or_token)
                with self.assertRaises(InvalidRequestError):
                    self.client.shares.download_to(url_or_token, io.BytesIO())
        self.assertEqual(self.proxy.requests, [])


if __name__ == "__main__":
    unittest.main()
