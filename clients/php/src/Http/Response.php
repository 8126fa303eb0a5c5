<?php

declare(strict_types=1);

namespace FileStorage\Http;

use FileStorage\Exception\InvalidResponseException;

/**
 * An answer: its status, its headers (lower-case names), its body (null when streamed to a sink) and the request it
 * answers, as messages show it ("GET /v1/files", no query string).
 */
final class Response
{
    /** @param array<string, string> $headers */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly ?string $body,
        public readonly string $request = '',
    ) {
    }

    /**
     * The body's JSON object; InvalidResponseException when it is not one (a captive portal's or a proxy's HTML page).
     *
     * @return array<string, mixed>
     */
    public function json(): array
    {
        $decoded = json_decode((string) $this->body, true);
        if (!is_array($decoded)) {
            throw InvalidResponseException::forBody($this->request, $this->status, $this->headers, (string) $this->body);
        }
        return $decoded;
    }

    public function header(string $name): ?string
    {
        return $this->headers[strtolower($name)] ?? null;
    }
}
