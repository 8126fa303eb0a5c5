"""
The conformance scenario of clients/conformance/scenario.json, run with unittest against a live server.

The harness (clients/conformance/conformance.e2e-spec.ts) sets FSS_BASE_URL, FSS_API_KEY, FSS_FREE_API_KEY,
FSS_SCENARIO, FSS_REPORT, FSS_WORK_DIR and FSS_PAST_LINK_EXPIRY_URL; see clients/conformance/scenario.md. Each step is one test, in the
scenario's order, and its outcome goes into the report the harness reads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import traceback
import unittest
from collections.abc import Callable
from typing import Any, ClassVar

from file_storage import (
    APIConnectionError,
    FileStorage,
    NotFoundError,
    PasswordRequiredError,
    RateLimitError,
    parse_webhook,
    verify_webhook_signature,
)

from .support import TestProxy, WebhookReceiver

ENV = os.environ
CONFIGURED = all(
    name in ENV for name in ("FSS_BASE_URL", "FSS_API_KEY", "FSS_FREE_API_KEY", "FSS_SCENARIO", "FSS_REPORT", "FSS_WORK_DIR", "FSS_PAST_LINK_EXPIRY_URL")
)
RESULTS: list[dict[str, Any]] = []


def md5_of_path(path: str) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as file:
        while chunk := file.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def write_random_file(path: str, size: int) -> str:
    """Writes ``size`` random bytes to ``path`` in slices; answers their MD5."""
    digest = hashlib.md5()
    with open(path, "wb") as file:
        left = size
        while left > 0:
            chunk = os.urandom(min(left, 1024 * 1024))
            digest.update(chunk)
            file.write(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def step(step_id: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Records the step's outcome for the report: passed, failed (with the error) or skipped (with the reason)."""

    def decorate(test: Callable[[Any], None]) -> Callable[[Any], None]:
        @functools.wraps(test)
        def run(self: Any) -> None:
            try:
                test(self)
            except unittest.SkipTest as skip:
                RESULTS.append({"id": step_id, "status": "skipped", "reason": str(skip)})
                raise
            except BaseException as error:
                RESULTS.append({"id": step_id, "status": "failed", "error": f"{error!r}\n{traceback.format_exc()}"})
                raise
            RESULTS.append({"id": step_id, "status": "passed"})

        run.step_id = step_id  # type: ignore[attr-defined]
        return run

    return decorate


@unittest.skipUnless(CONFIGURED, "needs a live server: run through clients/conformance (npm test)")
class ConformanceScenario(unittest.TestCase):
    scenario: ClassVar[dict[str, dict[str, Any]]]
    client: ClassVar[FileStorage]
    state: ClassVar[dict[str, Any]]
    work_dir: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        with open(ENV["FSS_SCENARIO"], encoding="utf-8") as file:
            steps = json.load(file)["steps"]
        cls.scenario = {entry["id"]: entry for entry in steps}
        implemented = [getattr(cls, name).step_id for name in sorted(dir(cls)) if name.startswith("test_")]
        if implemented != [entry["id"] for entry in steps]:
            raise AssertionError(f"the runner's steps {implemented} are not the scenario's {[entry['id'] for entry in steps]}")
        cls.client = FileStorage(ENV["FSS_API_KEY"], ENV["FSS_BASE_URL"])
        cls.state = {}
        cls.work_dir = ENV["FSS_WORK_DIR"]

    @classmethod
    def tearDownClass(cls) -> None:
        with open(ENV["FSS_REPORT"], "w", encoding="utf-8") as file:
            json.dump({"language": "python", "steps": RESULTS}, file, indent=2)

    def params(self, step_id: str) -> dict[str, Any]:
        return self.scenario[step_id].get("params", {})

    def upload_small(self, name: str) -> dict[str, Any]:
        return dict(self.client.files.upload(name.encode() * 3, name=name, folder_id=self.state["folder"]["id"]))

    @step("create_folder")
    def test_01_create_folder(self) -> None:
        name = self.params("create_folder")["folder_name"]
        folder = self.client.folders.create(name)
        self.assertTrue(folder["id"].startswith("fld_"))
        self.assertEqual((folder["name"], folder["parent_id"]), (name, None))
        self.state["folder"] = folder

    @step("upload_streamed")
    def test_02_upload_streamed(self) -> None:
        params = self.params("upload_streamed")
        path = os.path.join(self.work_dir, params["file_name"])
        local_md5 = write_random_file(path, params["size_bytes"])
        progress: list[int] = []
        uploaded = self.client.files.upload(path, folder_id=self.state["folder"]["id"], on_progress=lambda loaded, total: progress.append(loaded))
        self.assertEqual(uploaded["name"], params["file_name"])
        self.assertEqual(uploaded["size"], params["size_bytes"])
        self.assertEqual(uploaded["md5_hash"], local_md5)
        self.assertEqual(progress[-1], params["size_bytes"])
        self.state.update(big_file=uploaded, big_path=path, big_md5=local_md5)

    @step("list_paginated")
    def test_03_list_paginated(self) -> None:
        params = self.params("list_paginated")
        self.state["small"] = {name: self.upload_small(name) for name in params["extra_files"]}
        query = {"folder_id": self.state["folder"]["id"], "search": params["search"], "sort": params["sort"], "per_page": params["per_page"]}
        first_page = self.client.files.list(**query)
        self.assertGreater(first_page.pagination["total_pages"], 1)
        names = [file["name"] for file in self.client.files.list_all(**query)]
        self.assertEqual(names, ["conformance-a.txt", "conformance-b.txt", "conformance.bin"])

    @step("download_compare")
    def test_04_download_compare(self) -> None:
        big = self.state["big_file"]
        target = os.path.join(self.work_dir, "downloaded.bin")
        written = self.client.files.download_to(big["id"], target)
        self.assertEqual(written, big["size"])
        self.assertEqual(os.path.getsize(target), os.path.getsize(self.state["big_path"]))
        self.assertEqual(md5_of_path(target), self.state["big_md5"])
        digest = hashlib.md5()
        with self.client.files.download(big["id"]) as content:
            for chunk in content.iter_bytes():
                digest.update(chunk)
        self.assertEqual(digest.hexdigest(), self.state["big_md5"])

    @step("share_password")
    def test_05_share_password(self) -> None:
        password = self.params("share_password")["password"]
        shared = self.state["small"]["conformance-a.txt"]
        share = self.client.shares.create(shared["id"], password=password)
        self.assertTrue(share["password_protected"])
        with self.assertRaises(PasswordRequiredError) as refused:
            self.client.shares.open(share["url"])
        self.assertEqual((refused.exception.status, refused.exception.code), (401, "password_required"))
        visible = self.client.shares.open(share["url"], password=password)
        self.assertEqual(visible["file"]["name"], "conformance-a.txt")
        with self.client.shares.download(share["url"], password=password) as content:
            self.assertEqual(content.read(), b"conformance-a.txt" * 3)

    @step("trash_restore")
    def test_06_trash_restore(self) -> None:
        folder_id = self.state["folder"]["id"]
        victim = self.state["small"]["conformance-a.txt"]
        deleted = self.client.files.delete(victim["id"])
        self.assertEqual(deleted["id"], victim["id"])
        self.assertIsNotNone(deleted["recoverable_until"])
        self.assertIn(victim["id"], [item["id"] for item in self.client.trash.list_all()])
        self.assertNotIn(victim["id"], [file["id"] for file in self.client.files.list_all(folder_id=folder_id)])
        restored = self.client.files.restore(victim["id"])
        self.assertEqual((restored["id"], restored["folder_id"]), (victim["id"], folder_id))
        self.assertIn(victim["id"], [file["id"] for file in self.client.files.list_all(folder_id=folder_id)])

    @step("bulk_delete")
    def test_07_bulk_delete(self) -> None:
        ids = [self.state["small"]["conformance-b.txt"]["id"], self.state["small"]["other.txt"]["id"]]
        result = self.client.files.bulk_delete([*ids, "file_doesnotexist"])
        self.assertEqual(result["deleted"], ids)
        self.assertEqual((result["total"], result["deleted_count"], result["failed_count"]), (3, 2, 1))
        self.assertEqual(result["failed"][0]["id"], "file_doesnotexist")
        self.assertEqual(result["failed"][0]["error"]["code"], "not_found")

    @step("webhook_signature")
    def test_08_webhook_signature(self) -> None:
        params = self.params("webhook_signature")
        receiver = WebhookReceiver()
        try:
            webhook = self.client.webhooks.create(receiver.url, params["events"], secret=params["secret"])
            probe = self.upload_small("webhook-probe.txt")
            delivery = receiver.wait_for("file.uploaded")
            self.assertTrue(verify_webhook_signature(delivery.raw_body, delivery.headers, params["secret"]))
            self.assertFalse(verify_webhook_signature(delivery.raw_body, delivery.headers, "another-secret"))
            self.assertFalse(verify_webhook_signature(delivery.raw_body + b" ", delivery.headers, params["secret"]))
            body = parse_webhook(delivery.raw_body, delivery.headers, params["secret"])
            self.assertEqual((body["event"], body["webhook_id"], body["data"]["file"]["id"]), ("file.uploaded", webhook["id"], probe["id"]))
            self.client.webhooks.delete(webhook["id"])
        finally:
            receiver.close()

    @step("event_feed")
    def test_09_event_feed(self) -> None:
        try:
            self.client.events.list(limit=1)
        except NotFoundError as missing:
            # The one step a server may not support yet: the harness accepts the skip only when the route is missing.
            self.skipTest(f"GET /v1/events is not on this server ({missing.status} {missing.code}): the event feed cannot be read")
        wanted = {("folder.created", "folder", self.state["folder"]["id"]), ("file.uploaded", "file", self.state["big_file"]["id"])}
        seen_ids: set[str] = set()
        found: set[tuple[str, str, str]] = set()
        stream = self.client.events.stream()
        deadline = time.monotonic() + 30
        while found != wanted:
            for event in stream:
                self.assertEqual(set(event), {"id", "event", "timestamp", "data"})
                self.assertNotIn(event["id"], seen_ids, "an event was read twice")
                seen_ids.add(event["id"])
                for name, key, resource_id in wanted:
                    if event["event"] == name and event["data"].get(key, {}).get("id") == resource_id:
                        found.add((name, key, resource_id))
            if found != wanted:
                self.assertLess(time.monotonic(), deadline, f"the feed did not show {wanted - found} within 30 s")
                time.sleep(0.2)
        again = self.client.events.list(after=stream.cursor)
        self.assertFalse({event["id"] for event in again.data} & seen_ids, "reading on from next_cursor repeated events")

    @step("rate_limit_retry")
    def test_10_rate_limit_retry(self) -> None:
        no_retries = FileStorage(ENV["FSS_FREE_API_KEY"], ENV["FSS_BASE_URL"], max_retries=0)
        refused: RateLimitError | None = None
        refused_at = 0.0
        # A window about to reset leaves no time to be sure the next request is refused too: wait for the next one.
        for _ in range(3):
            refused = None
            for _ in range(500):
                try:
                    no_retries.user.info()
                except RateLimitError as error:
                    refused, refused_at = error, time.monotonic()
                    break
            self.assertIsNotNone(refused, "500 requests of a Free account were never refused")
            assert refused is not None
            if (refused.retry_after or 0) >= 3:
                break
            time.sleep(refused.retry_after or 1)
        assert refused is not None
        self.assertEqual((refused.status, refused.code), (429, "rate_limit_exceeded"))
        retry_after = refused.retry_after or 0
        self.assertGreaterEqual(retry_after, 3)
        retrying = FileStorage(ENV["FSS_FREE_API_KEY"], ENV["FSS_BASE_URL"], max_retries=3)
        sent_at = time.monotonic()
        folder = retrying.folders.create("After the limit")
        done_at = time.monotonic()
        # Sent while the window that refused was still open, the first attempt was refused too; it succeeded only
        # by waiting for that window to end.
        self.assertLess(sent_at - refused_at, retry_after - 1)
        self.assertGreaterEqual(done_at - refused_at, retry_after - 1)
        self.assertEqual([found["id"] for found in retrying.folders.list_all()], [folder["id"]])

    @step("resume_upload")
    def test_11_resume_upload(self) -> None:
        params = self.params("resume_upload")
        size, chunk = params["size_bytes"], params["chunk_bytes"]
        path = os.path.join(self.work_dir, "resumable.bin")
        local_md5 = write_random_file(path, size)
        proxy = TestProxy(ENV["FSS_BASE_URL"])
        try:
            through_proxy = FileStorage(ENV["FSS_API_KEY"], proxy.url, max_retries=0, chunk_size=chunk)
            upload = through_proxy.uploads.create(path, folder_id=self.state["folder"]["id"])
            self.assertEqual(upload.offset, 0)
            proxy.cut_request_after(chunk + chunk // 2 + 2048)  # the first PATCH (chunk and headers) passes, the second is cut mid-way
            with self.assertRaises(APIConnectionError):
                upload.send()
            self.assertEqual(proxy.cuts, 1)
        finally:
            proxy.close()
        resumed = self.client.uploads.resume(upload.url, path, chunk_size=chunk)
        self.assertGreaterEqual(resumed.offset, chunk)
        self.assertLess(resumed.offset, size)
        file = resumed.send()
        self.assertEqual((file["name"], file["size"], file["md5_hash"]), ("resumable.bin", size, local_md5))
        self.assertEqual(file["folder_id"], self.state["folder"]["id"])

    @step("resume_download")
    def test_12_resume_download(self) -> None:
        first_bytes = self.params("resume_download")["first_bytes"]
        big = self.state["big_file"]
        target = os.path.join(self.work_dir, "resumed-download.bin")
        self.assertEqual(self.client.files.download_to(big["id"], target, start=0, end=first_bytes - 1), first_bytes)
        with open(self.state["big_path"], "rb") as local:
            self.assertEqual(md5_of_path(target), hashlib.md5(local.read(first_bytes)).hexdigest())
        proxy = TestProxy(ENV["FSS_BASE_URL"])
        try:
            proxy.ignore_ranges(r"/download\?")
            through_proxy = FileStorage(ENV["FSS_API_KEY"], proxy.url)
            with open(target, "ab") as rest:
                through_proxy.files.download_to(big["id"], rest, start=os.path.getsize(target))
            self.assertEqual(len([line for line in proxy.requests if "/download?" in line]), 1)
        finally:
            proxy.close()
        self.assertEqual((os.path.getsize(target), md5_of_path(target)), (big["size"], self.state["big_md5"]))

    @step("download_past_link_expiry")
    def test_13_download_past_link_expiry(self) -> None:
        big = self.state["big_file"]
        target = os.path.join(self.work_dir, "past-link-expiry.bin")
        FileStorage(ENV["FSS_API_KEY"], ENV["FSS_PAST_LINK_EXPIRY_URL"]).files.download_to(big["id"], target)
        self.assertEqual((os.path.getsize(target), md5_of_path(target)), (big["size"], self.state["big_md5"]))


if __name__ == "__main__":
    unittest.main()
