<?php

declare(strict_types=1);

namespace FileStorage\Upload;

use FileStorage\Exception\FileStorageException;
use FileStorage\Exception\RateLimitException;
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
    /** Failures after which the upload asks HEAD for the offset and continues. */
    private const RESUMABLE_STATUSES = [409, 423, 429, 500, 502, 503, 504];

    /**
     * Creates the upload; answers its location (/v1/uploads/{id}), which resume() takes to continue it later.
     *
     * @param array<string, string|null> $metadata filename (required), name, folder_id, overwrite
     */
    public static function create(HttpClient $http, int $size, array $metadata): string
    {
        $created = $http->send('POST', '/v1/uploads', ['headers' => [
            'Tus-Resumable' => self::VERSION,
            'Upload-Length' => (string) $size,
            'Upload-Metadata' => self::encodeMetadata($metadata),
        ]]);
        $location = $created->header('location');
        if ($location === null) {
            throw new FileStorageException('invalid_response', 'The tus endpoint answered without a Location.', $created->status);
        }
        return $location;
    }

    /**
     * Sends the rest of the file from the server's offset; answers the id of the committed file.
     *
     * @param (callable(int, ?int): void)|null $onProgress
     */
    public static function resume(HttpClient $http, string $location, UploadSource $source, int $chunkBytes, ?callable $onProgress = null): string
    {
        [$offset, $fileId] = self::where($http, $location);
        $failures = 0;
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
                $failures = 0;
                if ($onProgress !== null) {
                    $onProgress($offset, $source->size);
                }
            } catch (FileStorageException $error) {
                $resumable = $error->getStatus() === null || in_array($error->getStatus(), self::RESUMABLE_STATUSES, true);
                if (!$resumable || ++$failures > $http->maxRetries) {
                    throw $error;
                }
                $wait = $error instanceof RateLimitException ? $error->getRetryAfter() : null;
                usleep((int) (($wait ?? HttpClient::backoff($failures - 1)) * 1e6));
                [$offset, $fileId] = self::where($http, $location);
            }
        }
        return $fileId;
    }

    /**
     * The server's offset for the upload, and the file id once it is complete.
     *
     * @return array{0: int, 1: ?string}
     */
    public static function where(HttpClient $http, string $location): array
    {
        $head = $http->send('HEAD', $location, ['headers' => ['Tus-Resumable' => self::VERSION]]);
        return [(int) $head->header('upload-offset'), $head->header('x-file-id')];
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
