import json
import pathlib
import typing
import unittest

from file_storage import types

OPENAPI = pathlib.Path(__file__).resolve().parents[3] / "openapi.json"

# Each TypedDict of file_storage.types and the openapi.json schema it mirrors.
SCHEMAS = {
    types.Pagination: "Pagination",
    types.CursorPagination: "CursorPagination",
    types.FileObject: "FileResponse",
    types.DeletedFile: "DeletedFileResponse",
    types.RestoredFile: "RestoredFileResponse",
    types.BulkDeleteFailure: "BulkDeleteFailureDoc",
    types.BulkDeleteResult: "BulkDeleteResponse",
    types.Folder: "FolderResponse",
    types.DeletedFolder: "DeletedFolderResponse",
    types.TrashedFile: "TrashedFileResponse",
    types.EmptiedTrash: "EmptiedTrashResponse",
    types.Share: "ShareResponse",
    types.ShareStatus: "ShareStatusResponse",
    types.RevokedShare: "RevokedShareResponse",
    types.PublicSharedFile: "PublicSharedFile",
    types.PublicShare: "PublicShareResponse",
    types.ApiKey: "ApiKeyResponse",
    types.CreatedApiKey: "CreatedApiKeyResponse",
    types.RevokedApiKey: "RevokedApiKeyResponse",
    types.StorageUsage: "StorageUsage",
    types.PlanLimits: "PlanLimits",
    types.CallingKey: "CallingKey",
    types.UserInfo: "UserInfoResponse",
    types.Webhook: "WebhookResponse",
    types.CreatedWebhook: "CreatedWebhookResponse",
    types.DeletedWebhook: "DeletedWebhookResponse",
    types.DeliveryAttempt: "DeliveryAttemptResponse",
    types.WebhookDelivery: "DeliveryResponse",
    types.Event: "EventResponse",
    types.RotatedWebhookSecret: "RotatedWebhookSecretResponse",
    types.ReplayQueued: "ReplayQueuedResponse",
}


@unittest.skipUnless(OPENAPI.exists(), "openapi.json is at the repository's root")
class TypesFollowOpenApi(unittest.TestCase):
    def test_every_typed_dict_has_the_fields_and_required_ones_of_its_schema(self) -> None:
        schemas = json.loads(OPENAPI.read_text(encoding="utf-8"))["components"]["schemas"]
        for typed_dict, name in SCHEMAS.items():
            with self.subTest(schema=name):
                schema = schemas[name]
                self.assertEqual(set(typing.get_type_hints(typed_dict)), set(schema["properties"]), f"the fields of {typed_dict.__name__}")
                self.assertEqual(set(getattr(typed_dict, "__required_keys__")), set(schema.get("required", [])), f"the required fields of {typed_dict.__name__}")


if __name__ == "__main__":
    unittest.main()
