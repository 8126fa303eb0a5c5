<?php

declare(strict_types=1);

namespace FileStorage;

/** Verifies webhook deliveries (docs/webhooks.md, "Verifying the signature"). */
final class Webhook
{
    /**
     * Whether a delivery is genuine: its X-Service-Signature header must be `sha256=` + the hex HMAC-SHA256 of the
     * raw request body, keyed with the webhook's secret. Pass the body exactly as received (file_get_contents
     * ('php://input')), before decoding it, and the headers in any spelling (getallheaders(), $_SERVER, PSR-7's
     * getHeaders()). Compared in constant time.
     *
     * @param array<string, string|list<string>> $headers
     */
    public static function verify(string $rawBody, array $headers, string $secret): bool
    {
        $header = self::header($headers, 'x-service-signature');
        if ($header === null || preg_match('/^sha256=([0-9a-f]{64})$/', trim($header), $match) !== 1) {
            return false;
        }
        return hash_equals(hash_hmac('sha256', $rawBody, $secret), $match[1]);
    }

    /**
     * Whether a delivery is genuine by its Standard Webhooks headers: one of the `v1,` signatures in webhook-signature
     * must be the base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{raw body}", and webhook-timestamp within
     * $tolerance seconds of $now (a captured delivery cannot be replayed later). Give the secret exactly as shown at
     * creation or rotation, or several (the old and the new during a rotation). A `whsec_` secret in canonical
     * base64 is keyed by its decoded bytes, any other by its bytes as given, as the service signs (docs/webhooks.md).
     * Compared in constant time.
     *
     * @param array<string, string|list<string>> $headers
     * @param string|list<string> $secrets
     */
    public static function verifyStandard(string $rawBody, array $headers, string|array $secrets, int $tolerance = 300, ?int $now = null): bool
    {
        $id = self::header($headers, 'webhook-id');
        $timestamp = self::header($headers, 'webhook-timestamp');
        $signatures = self::header($headers, 'webhook-signature');
        if ($id === null || $signatures === null || $timestamp === null || preg_match('/^\d{1,15}$/', $timestamp) !== 1) {
            return false;
        }
        if (abs(($now ?? time()) - (int) $timestamp) > $tolerance) {
            return false;
        }
        $message = "$id.$timestamp.$rawBody";
        $candidates = [];
        foreach (explode(' ', $signatures) as $one) {
            if (str_starts_with($one, 'v1,')) {
                $candidates[] = substr($one, 3);
            }
        }
        foreach ((array) $secrets as $secret) {
            $expected = base64_encode(hash_hmac('sha256', $message, self::standardKey($secret), true));
            foreach ($candidates as $candidate) {
                if (hash_equals($expected, $candidate)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static function standardKey(string $secret): string
    {
        $encoded = substr($secret, strlen('whsec_'));
        if (str_starts_with($secret, 'whsec_') && preg_match('#^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$#', $encoded) === 1) {
            $key = base64_decode($encoded, true);
            if ($key !== false && strlen($key) >= 24 && strlen($key) <= 64) {
                return $key;
            }
        }
        return $secret;
    }

    /** @param array<string, string|list<string>> $headers */
    private static function header(array $headers, string $name): ?string
    {
        foreach ($headers as $key => $value) {
            $normalized = strtolower(str_replace('_', '-', (string) $key));
            if ($normalized === $name || $normalized === "http-$name") {
                return is_array($value) ? ($value[0] ?? null) : $value;
            }
        }
        return null;
    }
}
