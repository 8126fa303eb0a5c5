<?php

declare(strict_types=1);

namespace FileStorage\Exception;

use FileStorage\Http\RetryAfter;

class RateLimitException extends FileStorageException
{
    /** Seconds to wait before the next request (the Retry-After header), or null. */
    public function getRetryAfter(): ?float
    {
        return RetryAfter::parse($this->getHeaders()['retry-after'] ?? null);
    }
}
