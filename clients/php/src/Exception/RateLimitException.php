<?php

declare(strict_types=1);

namespace FileStorage\Exception;

/** 429: too many requests; getRetryAfter() says how many seconds to wait. */
class RateLimitException extends FileStorageException
{
}
