"""The library against a live server, beyond the conformance scenario."""

import datetime
import hashlib
import http.client
import io
import json
import os
import socket
import struct
import threading
import time
import unittest
import uuid
import zlib
from typing import Any
from urllib.parse import urlsplit

from conformance.support import ReceivedDelivery, TestProxy, WebhookReceiver
from file_storage import (
    AuthenticationError,
    FileStorage,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    verify_standard_webhook,
    verify_webhook_signature,
)
from file_storage._source import multipart_body, open_source

from .live import API_KEY, BASE_URL, needs_server

KiB = 1024


def png_image(width: int = 64, height: int = 48) -> bytes:
    """A small real PNG of one colour, made with the standard library."""
    pixels = b"".join(b"\x00" + bytes((200, 40, 90)) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b"")


@needs_server
class AgainstTheServer(unittest.TestCase):
    client: FileStorage

    @classmethod
    def setUpClass(cls) -> None:
        cls.client = FileStorage(API_KEY or "", BASE_URL or "")

    def test_a_resumable_upload_survives_a_cut_connection_by_itself(self) -> None:
        content = os.urandom(700 * KiB)
        proxy = TestProxy(BASE_URL or "")
        self.addCleanup(proxy.close)
        client = FileStorage(API_KEY or "", proxy.url, resumable_threshold=256 * KiB, chunk_size=256 * KiB)
        proxy.cut_request_after(400 * KiB)  # in the middle of the second chunk
        progress: list[int] = []
        uploaded = client.files.upload(content, name="cut.bin", on_progress=lambda loaded, total: progress.append(loaded))
        self.assertEqual(proxy.cuts, 1)
        self.assertEqual((uploaded["size"], uploaded["md5_hash"]), (len(content), hashlib.md5(content).hexdigest()))
        self.assertEqual(progress[-1], len(content))
        # It continued from the server's offset instead of starting again: less than twice the file went through.
        self.assertLess(proxy.forwarded, 2 * len(content))

    def test_an_upload_sent_again_with_its_idempotency_key_stores_the_file_once_in_one_request_or_resumable(self) -> None:
        content = os.urandom(300 * KiB)
        for threshold in (2**62, 1):
            with self.subTest(resumable_threshold=threshold):
                folder = self.client.folders.create(f"idempotent upload {uuid.uuid4().hex}")
                options: dict[str, Any] = {"name": "once.bin", "folder_id": folder["id"], "idempotency_key": str(uuid.uuid4())}
                first = self.client.files.upload(content, resumable_threshold=threshold, **options)
                again = self.client.files.upload(content, resumable_threshold=threshold, **options)  # a restarted process
                self.assertEqual(again["id"], first["id"])
                self.assertEqual([file["name"] for file in self.client.files.list(folder_id=folder["id"]).data], ["once.bin"])

    def test_an_upload_retried_while_its_first_attempt_still_runs_waits_for_it_and_answers_the_same_file(self) -> None:
        content = os.urandom(64 * KiB)
        name = f"slow-{uuid.uuid4().hex}.bin"
        key = str(uuid.uuid4())
        # The first attempt of the same upload, sent by hand as the library sends it, whose body arrives slowly: the
        # server holds its Idempotency-Key until it has it all, and answers a retry 409 idempotency_key_in_use.
        body = multipart_body(open_source(content), name, {"name": name})
        raw = b"".join(body.open())
        server = urlsplit(BASE_URL or "")
        first = http.client.HTTPConnection(server.hostname or "127.0.0.1", server.port or 80, timeout=30)
        self.addCleanup(first.close)
        first.putrequest("POST", "/v1/files/upload")
        for header, value in {"Authorization": f"Bearer {API_KEY}", "Idempotency-Key": key, "Content-Type": body.content_type or "", "Content-Length": str(len(raw))}.items():
            first.putheader(header, value)
        first.endheaders(raw[: len(raw) // 2])
        time.sleep(0.5)  # for the server to take the key
        rest = threading.Timer(0.5, first.send, args=(raw[len(raw) // 2 :],))
        self.addCleanup(rest.cancel)
        started = time.monotonic()
        rest.start()
        uploaded = self.client.files.upload(content, name=name, idempotency_key=key)
        waited = time.monotonic() - started
        first_answer = json.loads(first.getresponse().read())
        self.assertEqual(uploaded["id"], first_answer["data"]["id"])
        self.assertGreaterEqual(waited, 0.9)  # at least one Retry-After
        self.assertEqual([f["id"] for f in self.client.files.list_all(search=name)], [uploaded["id"]])

    def _hold_with_a_slow_patch(self, url: str, content: bytes, later_bytes: bytes, delay: float = 5) -> None:
        """Another PATCH of 256 KiB from offset 0 holds the upload: its first 64 KiB now, `later_bytes` `delay` seconds later."""
        server = urlsplit(BASE_URL or "")
        patch = socket.create_connection((server.hostname or "127.0.0.1", server.port or 80))
        self.addCleanup(patch.close)
        head = (
            f"PATCH {urlsplit(url).path} HTTP/1.1\r\nHost: {server.netloc}\r\nAuthorization: Bearer {API_KEY}\r\n"
            f"Tus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: {256 * KiB}\r\n\r\n"
        )
        patch.sendall(head.encode() + content[: 64 * KiB])
        later = threading.Timer(delay, patch.sendall, args=(later_bytes,))
        self.addCleanup(later.cancel)
        later.start()

    def test_resuming_waits_until_the_server_releases_an_upload_held_by_a_stalled_patch(self) -> None:
        content = os.urandom(512 * KiB)
        # One retry: the client waits for a held upload whatever its retry budget (it used to give up with it).
        client = FileStorage(API_KEY or "", BASE_URL or "", max_retries=1)
        upload = client.uploads.create(content, name="stalled.bin")
        # A PATCH whose connection goes silent holds the upload until the server's idle timeout (60 s by default, 20 s
        # where the conformance suite starts the server) closes it. Its last bytes come after 5 s, so the upload is held
        # for 25 s or more.
        self._hold_with_a_slow_patch(upload.url, content, later_bytes=content[64 * KiB : 128 * KiB])
        started = time.monotonic()
        resumed = client.uploads.resume(upload.url, content)
        self.assertGreaterEqual(time.monotonic() - started, 20)
        self.assertEqual(resumed.offset, 128 * KiB)  # what the stalled PATCH brought is kept
        uploaded = resumed.send()
        self.assertEqual((uploaded["size"], uploaded["md5_hash"]), (len(content), hashlib.md5(content).hexdigest()))

    def test_a_patch_refused_while_another_holds_the_upload_waits_for_it_even_without_retries(self) -> None:
        content = os.urandom(512 * KiB)
        client = FileStorage(API_KEY or "", BASE_URL or "", max_retries=0)
        upload = client.uploads.create(content, name="held.bin")
        # Another PATCH holds the upload: it sends a quarter of its bytes, then the rest 6 s later. A request that finds
        # the upload held waits 3 s on the server, then gets 423.
        self._hold_with_a_slow_patch(upload.url, content, later_bytes=content[64 * KiB : 256 * KiB], delay=6)
        time.sleep(0.5)
        uploaded = upload.send()  # its first PATCH is answered 423 while the other runs
        self.assertEqual((uploaded["size"], uploaded["md5_hash"]), (len(content), hashlib.md5(content).hexdigest()))

    def test_uploads_from_a_pipe_chunked_and_downloads_to_a_file_object(self) -> None:
        read_end, write_end = os.pipe()
        content = os.urandom(300 * KiB)

        def produce() -> None:
            with os.fdopen(write_end, "wb") as writer:
                writer.write(content)

        producer = threading.Thread(target=produce)
        producer.start()
        with os.fdopen(read_end, "rb") as reader:
            uploaded = self.client.files.upload(reader, name="piped.bin")
        producer.join()
        self.assertEqual((uploaded["size"], uploaded["md5_hash"]), (len(content), hashlib.md5(content).hexdigest()))
        seekable = io.BytesIO(content)
        from_object = self.client.files.upload(seekable, name="object.bin")
        target = io.BytesIO()
        self.assertEqual(self.client.files.download_to(from_object["id"], target), len(content))
        self.assertEqual(target.getvalue(), content)

    def test_downloads_an_images_thumbnail_once_made_and_raises_not_found_for_a_file_without_one(self) -> None:
        image = self.client.files.upload(png_image(), name="photo.png")
        text = self.client.files.upload(b"no pixels here", name="notes.txt")
        deadline = time.monotonic() + 20
        while "thumbnail_url" not in self.client.files.get(image["id"]) and time.monotonic() < deadline:
            time.sleep(0.2)
        with self.client.files.thumbnail(image["id"]) as content:
            thumbnail = content.read()
        self.assertEqual((thumbnail[:4], thumbnail[8:12]), (b"RIFF", b"WEBP"))
        target = io.BytesIO()
        self.assertEqual(self.client.files.thumbnail_to(image["id"], target), len(thumbnail))
        self.assertEqual(target.getvalue(), thumbnail)
        with self.assertRaises(NotFoundError) as missing:
            self.client.files.thumbnail(text["id"])
        self.assertEqual(missing.exception.status, 404)
        self.assertIn("no thumbnail", str(missing.exception))

    def test_raises_typed_errors_with_status_code_and_request_id(self) -> None:
        with self.assertRaises(NotFoundError) as missing:
            self.client.files.get("file_nope")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "not_found"))
        self.assertTrue(missing.exception.request_id)
        with self.assertRaises(InvalidRequestError) as invalid:
            self.client.files.list(per_page=1000)
        self.assertIn("fields", invalid.exception.details)
        with self.assertRaises(AuthenticationError):
            FileStorage("fss_wrong", BASE_URL or "", max_retries=0).user.info()

    def test_manages_api_keys_and_reads_user_info(self) -> None:
        created = self.client.api_keys.create("reader", ["read"])
        reader = FileStorage(created["api_key"], BASE_URL or "")
        info = reader.user.info()
        self.assertEqual((info["key"]["scopes"], info["key"]["elevated"]), (["read"], False))
        with self.assertRaises(PermissionDeniedError):
            reader.folders.create("not allowed")
        self.assertIn(created["id"], [key["id"] for key in self.client.api_keys.list_all()])
        self.client.api_keys.revoke(created["id"])
        with self.assertRaises(AuthenticationError):
            reader.user.info()

    def test_a_name_with_an_unpaired_surrogate_is_refused_as_invalid_request_as_the_server_would(self) -> None:
        # os.listdir gives such names for file names that are not UTF-8 (surrogateescape).
        for name in ("caf\udce9.txt", "a\ud800b.txt"):
            for threshold in (2**62, 1):
                with self.subTest(name=repr(name), resumable_threshold=threshold):
                    with self.assertRaises(InvalidRequestError) as raised:
                        self.client.files.upload(io.BytesIO(b"x" * 10), name=name, resumable_threshold=threshold)
                    self.assertEqual(raised.exception.details["fields"][0]["field"], "name")
        with self.assertRaises(InvalidRequestError):
            self.client.uploads.create(b"x" * 10, name="caf\udce9.txt")

    def test_a_share_password_beyond_latin_1_opens_and_downloads_the_link(self) -> None:
        uploaded = self.client.files.upload(b"behind a password", name="guarded.txt")
        for password in ("pässwörd", "пароль 密码 😀"):
            with self.subTest(password=password):
                share = self.client.shares.create(uploaded["id"], password=password)
                self.assertEqual(self.client.shares.open(share["url"], password=password)["file"]["name"], uploaded["name"])
                copy = io.BytesIO()
                self.client.shares.download_to(share["url"], copy, password=password)
                self.assertEqual(copy.getvalue(), b"behind a password")

    def test_folders_shares_webhooks_and_trash_round_trip(self) -> None:
        folder = self.client.folders.create("Round trip")
        renamed = self.client.folders.update(folder["id"], name="Renamed")
        self.assertEqual(renamed["name"], "Renamed")
        self.assertEqual(self.client.folders.get(folder["id"]), renamed)
        uploaded = self.client.files.upload(b"in a folder", name="inside.txt", folder_id=folder["id"])
        moved = self.client.files.update(uploaded["id"], folder_id=None)
        self.assertIsNone(moved["folder_id"])
        share = self.client.shares.create(uploaded["id"])
        self.assertEqual(self.client.shares.open(share["url"])["file"]["name"], "inside.txt")
        visitor_copy = io.BytesIO()
        self.assertEqual(self.client.shares.download_to(share["url"], visitor_copy), len(b"in a folder"))
        self.assertEqual(visitor_copy.getvalue(), b"in a folder")
        self.assertIn(share["id"], [s["id"] for s in self.client.shares.list_all(file_id=uploaded["id"])])
        fetched = self.client.shares.get(share["id"])
        self.assertEqual((fetched["url"], fetched["file_id"], fetched["active"], fetched["revoked_at"]), (share["url"], uploaded["id"], True, None))
        self.assertEqual(fetched, self.client.shares.list(file_id=uploaded["id"]).data[0])
        revoked = self.client.shares.revoke(share["id"])
        with self.assertRaises(NotFoundError):
            self.client.shares.open(share["url"])
        still_there = self.client.shares.get(share["id"])
        self.assertEqual((still_there["id"], still_there["active"], still_there["revoked_at"]), (share["id"], False, revoked["revoked_at"]))
        with self.assertRaises(NotFoundError):
            self.client.shares.get("shr_00000000000000000000000000000000")
        webhook = self.client.webhooks.create("http://127.0.0.1:9/hooks", ["folder.created"], active=False)
        self.assertTrue(self.client.webhooks.update(webhook["id"], active=True, events=["file.deleted"])["active"])
        self.assertEqual(self.client.webhooks.get(webhook["id"])["events"], ["file.deleted"])
        self.assertEqual(self.client.webhooks.delete(webhook["id"]), {"id": webhook["id"], "deleted": True})
        deleted_folder = self.client.folders.delete(folder["id"])
        self.assertEqual(deleted_folder["id"], folder["id"])
        with self.assertRaises(NotFoundError):
            self.client.folders.get(folder["id"])
        self.client.files.delete(uploaded["id"])
        self.assertGreaterEqual(self.client.trash.empty()["deleted_count"], 1)
        with self.assertRaises(NotFoundError):
            self.client.files.restore(uploaded["id"])

    def test_share_listings_answer_each_link_with_its_status_as_get_does(self) -> None:
        uploaded = self.client.files.upload(b"listed links", name="listed.txt")
        kept = self.client.shares.create(uploaded["id"])
        revoked = self.client.shares.create(uploaded["id"])
        revoked_at = self.client.shares.revoke(revoked["id"])["revoked_at"]
        # Typed as what the server answers (ShareStatus): mypy refuses "active" and "revoked_at" on a Share.
        listed = {share["id"]: (share["active"], share["revoked_at"]) for share in self.client.shares.list(file_id=uploaded["id"]).data}
        walked = {share["id"]: (share["active"], share["revoked_at"]) for share in self.client.shares.list_all(file_id=uploaded["id"])}
        self.assertEqual(listed, {kept["id"]: (True, None), revoked["id"]: (False, revoked_at)})
        self.assertEqual(walked, listed)

    def test_list_all_follows_cursors_so_a_delete_while_iterating_skips_nothing(self) -> None:
        folder = self.client.folders.create("Cursor walk")
        names = [f"walk-{i}.txt" for i in range(4)]
        for name in names:
            self.client.files.upload(name.encode(), name=name, folder_id=folder["id"])
        seen = []
        for file in self.client.files.list_all(folder_id=folder["id"], sort="name_asc", per_page=1):
            seen.append(file["name"])
            if len(seen) == 1:
                self.client.files.delete(file["id"])  # with page numbers, the next page would now skip walk-1.txt
        self.assertEqual(seen, names)

    def test_pages_by_cursor_by_hand_with_the_next_cursor_each_page_answers(self) -> None:
        folder = self.client.folders.create("Cursor by hand")
        names = [f"page-{i}.txt" for i in range(3)]
        for name in names:
            self.client.files.upload(name.encode(), name=name, folder_id=folder["id"])
        page = self.client.files.list(folder_id=folder["id"], sort="name_asc", per_page=2)
        seen = [file["name"] for file in page.data]
        cursor = page.pagination["next_cursor"]  # typed: mypy refuses a key the page's type does not have
        self.assertIsNotNone(cursor)
        last = self.client.files.list(folder_id=folder["id"], sort="name_asc", per_page=2, cursor=cursor)
        seen += [file["name"] for file in last.data]
        self.assertEqual((seen, last.pagination["next_cursor"]), (names, None))
        for pagination in (self.client.folders.list().pagination, self.client.trash.list().pagination, self.client.shares.list().pagination):
            self.assertIn("next_cursor", pagination)

    def test_tails_the_event_feed_with_a_long_poll_filtered_by_type(self) -> None:
        caught_up = self.client.events.stream()
        for _ in caught_up:
            pass
        # The folder is created while the tail's long poll is already waiting.
        creator = threading.Timer(0.5, lambda: self.client.folders.create("Tailed"))
        creator.start()
        self.addCleanup(creator.cancel)
        tail = self.client.events.tail(after=caught_up.cursor, types=["folder.created"], wait=20)
        event = next(iter(tail))
        self.assertEqual((event["event"], event["data"]["folder"]["name"]), ("folder.created", "Tailed"))

    def test_a_tail_left_at_an_event_resumes_after_it_without_repeating_it(self) -> None:
        caught_up = self.client.events.stream()
        for _ in caught_up:
            pass
        folder = self.client.folders.create("Left at")
        tail = self.client.events.tail(after=caught_up.cursor, types=["folder.created"], wait=20)
        for event in tail:
            if event["data"]["folder"]["id"] == folder["id"]:
                break  # a tail never ends by itself: a program stops at an event, keeps tail.cursor, resumes later
        resumed = [event["data"]["folder"]["id"] for event in self.client.events.stream(after=tail.cursor, types=["folder.created"])]
        self.assertNotIn(folder["id"], resumed)

    def test_rotates_a_webhook_secret_and_deliveries_verify_with_the_new_one(self) -> None:
        receiver = WebhookReceiver()
        self.addCleanup(receiver.close)
        old_secret = "an-old-webhook-secret-0123456789"
        webhook = self.client.webhooks.create(receiver.url, ["folder.created"], secret=old_secret)
        self.addCleanup(self.client.webhooks.delete, webhook["id"])
        rotated = self.client.webhooks.rotate_secret(webhook["id"], expires_in=3600)
        self.assertEqual(rotated["id"], webhook["id"])
        self.assertNotEqual(rotated["secret"], old_secret)
        self.assertIsNotNone(rotated["previous_secret_expires_at"])
        folder = self.client.folders.create("After the rotation")
        delivery = receiver.wait_until(lambda d: bool(json.loads(d.raw_body)["data"]["folder"]["id"] == folder["id"]), 1)[0]
        self.assertTrue(verify_webhook_signature(delivery.raw_body, delivery.headers, rotated["secret"]))
        self.assertFalse(verify_webhook_signature(delivery.raw_body, delivery.headers, old_secret))
        # During the grace period the Standard Webhooks header carries a signature by each secret.
        self.assertTrue(verify_standard_webhook(delivery.raw_body, delivery.headers, rotated["secret"]))
        self.assertTrue(verify_standard_webhook(delivery.raw_body, delivery.headers, old_secret))
        self.assertFalse(verify_standard_webhook(delivery.raw_body, delivery.headers, "yet-another-secret"))

    def test_replays_a_window_of_events_to_a_webhook(self) -> None:
        receiver = WebhookReceiver()
        self.addCleanup(receiver.close)
        webhook = self.client.webhooks.create(receiver.url, ["folder.created"])
        self.addCleanup(self.client.webhooks.delete, webhook["id"])
        since = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
        folder = self.client.folders.create("Replayed")

        def about_folder(delivery: ReceivedDelivery) -> bool:
            return bool(json.loads(delivery.raw_body)["data"]["folder"]["id"] == folder["id"])

        receiver.wait_until(about_folder, 1)
        replayed = self.client.webhooks.replay(webhook["id"], since=since)
        self.assertGreaterEqual(replayed["queued"], 1)
        first, again = receiver.wait_until(about_folder, 2)
        self.assertEqual(json.loads(first.raw_body)["timestamp"], json.loads(again.raw_body)["timestamp"])
        self.assertNotEqual(first.header("X-Service-Delivery-ID"), again.header("X-Service-Delivery-ID"))


if __name__ == "__main__":
    unittest.main()
