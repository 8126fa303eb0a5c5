<?php

declare(strict_types=1);

namespace FileStorage\Exception;

/** The typed exception for a failed answer; reads the error envelope when there is one. */
final class ErrorFactory
{
    private const CLASSES = [
        'invalid_request' => InvalidRequestException::class,
        'authentication_failed' => AuthenticationException::class,
        'permission_denied' => PermissionDeniedException::class,
        'not_found' => NotFoundException::class,
        'conflict' => ConflictException::class,
        'idempotency_key_in_use' => IdempotencyException::class,
        'idempotency_key_reused' => IdempotencyException::class,
        'cursor_expired' => CursorExpiredException::class,
        'rate_limit_exceeded' => RateLimitException::class,
        'file_too_large' => FileTooLargeException::class,
        'storage_exceeded' => StorageExceededException::class,
        'share_expired' => ShareExpiredException::class,
        'password_required' => PasswordRequiredException::class,
        'file_infected' => FileInfectedException::class,
        'service_unavailable' => ServiceUnavailableException::class,
        'internal_error' => InternalServerException::class,
    ];

    // Answers without an envelope (a proxy's 502, a HEAD's 423) still get the class their status implies.
    private const CODES_BY_STATUS = [
        400 => 'invalid_request', 401 => 'authentication_failed', 403 => 'permission_denied', 404 => 'not_found',
        409 => 'conflict', 410 => 'not_found', 423 => 'conflict', 429 => 'rate_limit_exceeded', 503 => 'service_unavailable',
    ];

    /** @param array<string, string> $headers lower-case names */
    public static function fromResponse(int $status, array $headers, string $body): FileStorageException
    {
        $envelope = json_decode($body, true);
        $error = is_array($envelope) && is_array($envelope['error'] ?? null) ? $envelope['error'] : [];
        $code = is_string($error['code'] ?? null)
            ? $error['code']
            : (self::CODES_BY_STATUS[$status] ?? ($status >= 500 ? 'internal_error' : 'http_error'));
        $class = self::CLASSES[$code] ?? FileStorageException::class;
        return new $class(
            $code,
            is_string($error['message'] ?? null) ? $error['message'] : "HTTP $status",
            $status,
            is_array($error['details'] ?? null) ? $error['details'] : null,
            $headers['x-request-id'] ?? null,
            $headers,
        );
    }
}
