<?php

declare(strict_types=1);

namespace FileStorage\Exception;

/**
 * An answer that is not what the API sends: a body that is not the JSON expected (a captive portal's or a proxy's HTML
 * page), a tus creation without Location. The message quotes the start of the body.
 */
class InvalidResponseException extends FileStorageException
{
    private const BODY_EXCERPT_BYTES = 200;

    /**
     * For an answer whose body is not the JSON expected: its status, its content type and the start of its body, so a
     * captive portal or a proxy's error page is recognised.
     *
     * @param array<string, string> $headers lower-case names
     */
    public static function forBody(string $request, int $status, array $headers, string $body): self
    {
        $excerpt = trim((string) preg_replace('/\s+/', ' ', $body));
        if (strlen($excerpt) > self::BODY_EXCERPT_BYTES) {
            $excerpt = substr($excerpt, 0, self::BODY_EXCERPT_BYTES) . '…';
        }
        // Bytes that are not UTF-8 (or a character cut in two) are shown as U+FFFD.
        $quoted = json_encode($excerpt, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE);
        $type = $headers['content-type'] ?? 'no content type';
        return new self(
            'invalid_response',
            "$request: the server answered $status with a body that is not the JSON expected ($type): $quoted",
            $status,
            null,
            $headers['x-request-id'] ?? null,
            $headers,
        );
    }
}
