<?php

declare(strict_types=1);

namespace FileStorage\Http;

/** An answer: its status, its headers (lower-case names) and its body (null when streamed to a sink). */
final class Response
{
    /** @param array<string, string> $headers */
    public function __construct(
        public readonly int $status,
        public readonly array $headers,
        public readonly ?string $body,
    ) {
    }

    /** @return array<string, mixed> */
    public function json(): array
    {
        return json_decode((string) $this->body, true, 512, JSON_THROW_ON_ERROR);
    }

    public function header(string $name): ?string
    {
        return $this->headers[strtolower($name)] ?? null;
    }
}
