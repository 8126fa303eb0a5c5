<?php

declare(strict_types=1);

namespace FileStorage\Exception;

use FileStorage\Http\RetryAfter;

/**
 * Every error the client raises for an answer of the server, or for a failed exchange with it.
 * getErrorCode() is the envelope's code ("not_found"…; "connection_error" or "timeout" when no answer arrived).
 */
class FileStorageException extends \RuntimeException
{
    /**
     * @param array<string, mixed>|null $details
     * @param array<string, string> $headers lower-case header names
     */
    public function __construct(
        private readonly string $errorCode,
        string $message,
        private readonly ?int $status = null,
        private readonly ?array $details = null,
        private readonly ?string $requestId = null,
        private readonly array $headers = [],
        ?\Throwable $previous = null,
    ) {
        parent::__construct($message, $status ?? 0, $previous);
    }

    public function getErrorCode(): string
    {
        return $this->errorCode;
    }

    /** The HTTP status, or null when no answer arrived. */
    public function getStatus(): ?int
    {
        return $this->status;
    }

    /** @return array<string, mixed>|null */
    public function getDetails(): ?array
    {
        return $this->details;
    }

    /** The X-Request-Id of the answer: quote it when asking for support. */
    public function getRequestId(): ?string
    {
        return $this->requestId;
    }

    /** @return array<string, string> */
    public function getHeaders(): array
    {
        return $this->headers;
    }

    /**
     * Seconds the server asked to wait before the next request (its Retry-After header, on a 429 or a 503), or null. An
     * answer that asks for longer than the client waits by itself (120 s) is thrown at once with it, for the caller to
     * schedule the retry.
     */
    public function getRetryAfter(): ?float
    {
        return RetryAfter::parse($this->headers['retry-after'] ?? null);
    }

    protected function detail(string $key): mixed
    {
        return $this->details[$key] ?? null;
    }
}
