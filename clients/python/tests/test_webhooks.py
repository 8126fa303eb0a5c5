import unittest

from file_storage import WebhookSignatureError, parse_webhook, verify_standard_webhook, verify_webhook_signature

# A body and the header the server's signer (HMAC-SHA256 in Node's crypto) produces for it, with this secret.
BODY = '{"event":"webhook.test","timestamp":"2026-11-21T10:00:00.000Z","webhook_id":"wh_1","data":{"message":"héllo"},"signature":"sha256=00"}'
SECRET = "a-long-webhook-secret"
HEADER = "sha256=285c945f6a4e697a0cadb17f9c352f590755c059440b18a031cbbb32079a527b"


class VerifyWebhookSignature(unittest.TestCase):
    def test_accepts_the_servers_signature_of_the_raw_body_as_bytes_or_text(self) -> None:
        self.assertTrue(verify_webhook_signature(BODY.encode(), {"X-Service-Signature": HEADER}, SECRET))
        self.assertTrue(verify_webhook_signature(BODY, {"x-service-signature": HEADER}, SECRET))
        self.assertTrue(verify_webhook_signature(BODY, HEADER, SECRET))

    def test_rejects_another_secret_an_altered_body_and_a_malformed_or_missing_header(self) -> None:
        self.assertFalse(verify_webhook_signature(BODY, {"X-Service-Signature": HEADER}, "another-secret"))
        self.assertFalse(verify_webhook_signature(BODY.replace("héllo", "hello"), {"X-Service-Signature": HEADER}, SECRET))
        self.assertFalse(verify_webhook_signature(BODY, {"X-Service-Signature": HEADER.upper()}, SECRET))
        self.assertFalse(verify_webhook_signature(BODY, {"X-Service-Signature": HEADER[len("sha256=") :]}, SECRET))
        self.assertFalse(verify_webhook_signature(BODY, {"X-Service-Signature": HEADER + "00"}, SECRET))
        self.assertFalse(verify_webhook_signature(BODY, {}, SECRET))
        self.assertFalse(verify_webhook_signature(BODY, None, SECRET))

    def test_parse_webhook_answers_the_body_once_verified_and_raises_otherwise(self) -> None:
        self.assertEqual(parse_webhook(BODY, HEADER, SECRET)["data"], {"message": "héllo"})
        with self.assertRaises(WebhookSignatureError) as refused:
            parse_webhook(BODY, HEADER, "another-secret")
        self.assertEqual(refused.exception.status, 401)


# Standard Webhooks: signatures computed with Node's crypto over "{webhook-id}.{webhook-timestamp}.{body}".
STANDARD_BODY = '{"event":"file.uploaded"}'
STANDARD_SECRET = "whsec_BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="  # keyed by the 32 decoded bytes
STANDARD_SIGNATURE = "v1,B5WwGKuPyh0J+iHieodIRDMHGa23xpc4m87RWt+P3Ow="
RAW_SECRET = "my-own-secret"  # not standard base64: keyed by its UTF-8 bytes
RAW_SIGNATURE = "v1,w6nqiuve/ooAkyZQCfArIgbDbp5E3HVIun0fiV4nmZU="
SENT_AT = 1764000000


def standard_headers(signatures: str, timestamp: int = SENT_AT) -> dict[str, str]:
    return {"webhook-id": "evt_1", "webhook-timestamp": str(timestamp), "webhook-signature": signatures}


class VerifyStandardWebhook(unittest.TestCase):
    def test_accepts_a_standard_secret_and_a_raw_one_and_either_of_two_during_a_rotation(self) -> None:
        self.assertTrue(verify_standard_webhook(STANDARD_BODY, standard_headers(STANDARD_SIGNATURE), STANDARD_SECRET, now=SENT_AT))
        self.assertTrue(verify_standard_webhook(STANDARD_BODY.encode(), standard_headers(RAW_SIGNATURE), RAW_SECRET, now=SENT_AT + 299))
        both = standard_headers(f"{RAW_SIGNATURE} {STANDARD_SIGNATURE}")
        self.assertTrue(verify_standard_webhook(STANDARD_BODY, both, STANDARD_SECRET, now=SENT_AT))
        self.assertTrue(verify_standard_webhook(STANDARD_BODY, standard_headers(STANDARD_SIGNATURE), ["old-secret", STANDARD_SECRET], now=SENT_AT))

    def test_rejects_a_wrong_secret_an_altered_body_an_old_timestamp_and_missing_headers(self) -> None:
        headers = standard_headers(STANDARD_SIGNATURE)
        self.assertFalse(verify_standard_webhook(STANDARD_BODY, headers, RAW_SECRET, now=SENT_AT))
        self.assertFalse(verify_standard_webhook(STANDARD_BODY + " ", headers, STANDARD_SECRET, now=SENT_AT))
        self.assertFalse(verify_standard_webhook(STANDARD_BODY, headers, STANDARD_SECRET, now=SENT_AT + 301))
        self.assertFalse(verify_standard_webhook(STANDARD_BODY, {**headers, "webhook-id": "evt_2"}, STANDARD_SECRET, now=SENT_AT))
        self.assertFalse(verify_standard_webhook(STANDARD_BODY, {"webhook-signature": STANDARD_SIGNATURE}, STANDARD_SECRET, now=SENT_AT))
        self.assertFalse(verify_standard_webhook(STANDARD_BODY, standard_headers("v1,not base64!"), STANDARD_SECRET, now=SENT_AT))


if __name__ == "__main__":
    unittest.main()
