<?php

declare(strict_types=1);

namespace FileStorage\Http;

final class RetryAfter
{
    /** Retry-After in seconds, from either of its forms (delta-seconds or an HTTP date); null when absent or unreadable. */
    public static function parse(?string $value): ?float
    {
        if ($value === null || trim($value) === '') {
            return null;
        }
        $value = trim($value);
        if (preg_match('/^\d+(\.\d+)?$/', $value) === 1) {
            return (float) $value;
        }
        $time = strtotime($value);
        return $time === false ? null : max(0.0, (float) ($time - time()));
    }
}
