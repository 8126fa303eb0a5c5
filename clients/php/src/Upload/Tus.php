<?php

declare(strict_types=1);

namespace FileStorage\Upload;

use FileStorage\Exception\FileStorageException;
use FileStorage\Exception\InvalidResponseException;
use FileStorage\Http\HttpClient;
use FileStorage\Http\RequestBody;
use FileStorage\Http\StringReader;

/**
 * Uploads a file of known size through the tus 1.0 endpoint /v1/uploads, one chunk per PATCH. After a failed PATCH
 * it asks HEAD where the server stands and continues from there: the bytes sent so far are kept.
 */
final class Tus
{
    public const VERSION = '1.0.0';
    /**
     * Seconds a run of failures is retried (with maxRetries 0, only a lock is waited for): long enough for the lock
     * (423) of an earlier PATCH that was cut off, which the server holds until its idle timeout (60 s by default) and
     * the lock's expiry (15 s) end it.
     */
    public const RETRY_SECONDS = 80.0;
    /** Failures of HEAD that are asked again. */
    private const RETRYABLE_STATUSES = [423, 429, 500, 502, 503, 504];
    /** Failures of a PATCH after which the upload asks HEAD for the offset and continues (409: another offset). */
    private const RESUMABLE_STATUSES = [409, ...self::RETRYABLE_STATUSES];

    /**
     * Creates the upload; answers its location (/v1/uploads/{id}), which resume() takes to continue it later. Created
     * again with the same $idempotencyKey (a restarted process), it answers the same upload.
     *
     * @param array<string, string|null> $metadata filename (required), name, folder_id, overwrite
     */
    public static function create(HttpClient $http, int $size, array $metadata, ?string $idempotencyKey = null): string
    {
        $created = $http->send('POST', '/v1/uploads', ['headers' => [
            'Tus-Resumable' => self::VERSION,
            'Upload-Length' => (string) $size,
            'Upload-Metadata' => self::encodeMetadata($metadata),
        ] + ($idempotencyKey === null ? [] : ['Idempotency-Key' => $idempotencyKey])]);
        $location = $created->header('location');
        if ($location === null) {
            throw new InvalidResponseException('invalid_response', 'The tus endpoint answered without a Location.', $created->status, headers: $created->headers);
        }
        return $location;
    }

    /**
     * Sends the rest of the file from the server's offset; answers the id of the committed file. A source of another size
     * than the upload's is refused before a byte is sent (the server checks only the length; a shorter one sent empty
     * PATCHes forever).
     *
     * @param (callable(int, ?int): void)|null $onProgress
     */
    public static function resume(HttpClient $http, string $location, UploadSource $source, int $chunkBytes, ?callable $onProgress = null): string
    {
        [$offset, $fileId, $length] = self::where($http, $location);
        if ($length !== null && $length !== $source->size) {
            throw new \InvalidArgumentException("The upload at $location is $length bytes long; the source given to resume it is {$source->size}.");
        }
        $failures = 0;
        $giveUpAt = null;
        while ($fileId === null) {
            try {
                $chunk = $source->chunk($offset, min((int) $source->size, $offset + $chunkBytes));
                $answer = $http->send('PATCH', $location, [
                    'headers' => [
                        'Tus-Resumable' => self::VERSION,
                        'Upload-Offset' => (string) $offset,
                        'Content-Type' => 'application/offset+octet-stream',
                    ],
                    'body' => new RequestBody(static fn () => new StringReader($chunk), strlen($chunk), null, true),
                    'retryable' => false,
                ]);
                $offset = (int) $answer->header('upload-offset');
                $fileId = $answer->header('x-file-id');
                [$failures, $giveUpAt] = [0, null];
                if ($onProgress !== null) {
                    $onProgress($offset, $source->size);
                }
            } catch (FileStorageException $error) {
                $giveUpAt ??= microtime(true) + self::RETRY_SECONDS;
                self::waitBeforeRetry($http, $error, self::RESUMABLE_STATUSES, $failures++, $giveUpAt);
                [$offset, $fileId] = self::where($http, $location, $giveUpAt);
            }
        }
        return $fileId;
    }

    /**
     * The server's offset for the upload, the file id once it is complete, and the upload's length. HEAD is asked again
     * after a 423 (the upload is locked by another request), 429, 5xx or network error, until $giveUpAt (by default
     * RETRY_SECONDS after the first failure).
     *
     * @return array{0: int, 1: ?string, 2: ?int}
     */
    public static function where(HttpClient $http, string $location, ?float $giveUpAt = null): array
    {
        for ($failures = 0; ; $failures++) {
            try {
                $head = $http->send('HEAD', $location, ['headers' => ['Tus-Resumable' => self::VERSION], 'retryable' => false]);
                $length = $head->header('upload-length');
                return [(int) $head->header('upload-offset'), $head->header('x-file-id'), $length === null ? null : (int) $length];
            } catch (FileStorageException $error) {
                $giveUpAt ??= microtime(true) + self::RETRY_SECONDS;
                self::waitBeforeRetry($http, $error, self::RETRYABLE_STATUSES, $failures, $giveUpAt);
            }
        }
    }

    /**
     * Sleeps before the next attempt (Retry-After, else the backoff), or throws $error: when it is not worth retrying,
     * when retries are off (maxRetries 0) and the upload is not merely locked, or when the wait would end after
     * $giveUpAt. A lock (423) is no failure to retry but another request on the upload still running, often this
     * client's own cut-off PATCH: it is waited for even without retries.
     *
     * @param list<int> $statuses
     */
    private static function waitBeforeRetry(HttpClient $http, FileStorageException $error, array $statuses, int $failures, float $giveUpAt): void
    {
        // No status: no answer arrived (a network error or a timeout).
        $retryable = $error->getStatus() === null || in_array($error->getStatus(), $statuses, true);
        $retriesOff = $http->maxRetries === 0 && $error->getStatus() !== 423;
        $wait = $error->getRetryAfter() ?? HttpClient::backoff($failures);
        if (!$retryable || $retriesOff || microtime(true) + $wait > $giveUpAt) {
            throw $error;
        }
        usleep((int) ($wait * 1e6));
    }

    /** Deletes the upload and the bytes sent so far (tus termination); the server gives its reserved quota back. */
    public static function terminate(HttpClient $http, string $location): void
    {
        $http->send('DELETE', $location, ['headers' => ['Tus-Resumable' => self::VERSION]]);
    }

    /**
     * tus Upload-Metadata: comma-separated `key base64(value)` pairs; missing values are left out.
     *
     * @param array<string, string|null> $values
     */
    public static function encodeMetadata(array $values): string
    {
        $pairs = [];
        foreach ($values as $key => $value) {
            if ($value !== null) {
                $pairs[] = $key . ' ' . base64_encode($value);
            }
        }
        return implode(',', $pairs);
    }
}
