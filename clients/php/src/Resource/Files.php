<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Exception\NotFoundException;
use FileStorage\Http\HttpClient;
use FileStorage\Page;
use FileStorage\Upload\MultipartBody;
use FileStorage\Upload\Tus;
use FileStorage\Upload\UploadSource;

/** Files: upload (streamed, resumable above a threshold), list, get, update, delete, restore, download, thumbnail. */
final class Files
{
    use Listing;

    public function __construct(HttpClient $http, private readonly int $resumableThreshold, private readonly int $resumableChunk)
    {
        $this->http = $http;
    }

    /**
     * Uploads a file from a path or a stream resource, streamed; a stream from where it stands. A path or a seekable
     * stream (of a file, php://temp) at or above the resumable threshold goes through the tus endpoint in chunks,
     * resuming after failures; anything else is one multipart request. A path or a seekable stream is retried; a
     * stream that cannot seek (a pipe, a socket) is read once.
     *
     * Options: name, folderId, overwrite (bool), onProgress (callable(int $sent, ?int $total)), idempotencyKey,
     * resumableThreshold.
     *
     * @param string|resource $source
     * @param array<string, mixed> $options
     * @return array<string, mixed> the File
     */
    public function upload(mixed $source, array $options = []): array
    {
        $opened = UploadSource::open($source);
        $filename = $options['name'] ?? $opened->name;
        if ($filename === null) {
            throw new \InvalidArgumentException("upload needs the 'name' option when the source is a stream without a path.");
        }
        $overwrite = isset($options['overwrite']) ? ($options['overwrite'] ? 'true' : 'false') : null;
        $threshold = $options['resumableThreshold'] ?? $this->resumableThreshold;
        if ($opened->replayable() && $opened->size > 0 && $opened->size >= $threshold) {
            $location = Tus::create($this->http, (int) $opened->size, [
                'filename' => $filename, 'name' => $options['name'] ?? null, 'folder_id' => $options['folderId'] ?? null, 'overwrite' => $overwrite,
            ], $options['idempotencyKey'] ?? null);
            return $this->get(Tus::resume($this->http, $location, $opened, $this->resumableChunk, $options['onProgress'] ?? null));
        }
        $fields = ['folder_id' => $options['folderId'] ?? null, 'name' => $options['name'] ?? null, 'overwrite' => $overwrite];
        $body = MultipartBody::build($opened, $filename, $fields, $options['onProgress'] ?? null);
        return $this->http->data('POST', '/v1/files/upload', ['body' => $body, 'headers' => self::idempotency($options['idempotencyKey'] ?? null)]);
    }

    /**
     * Starts a resumable upload of a path and answers its location, for resumeUpload(), even from another process.
     *
     * @param array<string, mixed> $options name, folderId, overwrite, idempotencyKey (started again with it, the same upload)
     */
    public function startResumableUpload(string $path, array $options = []): string
    {
        $opened = UploadSource::open($path);
        return Tus::create($this->http, (int) $opened->size, [
            'filename' => $options['name'] ?? $opened->name,
            'name' => $options['name'] ?? null,
            'folder_id' => $options['folderId'] ?? null,
            'overwrite' => isset($options['overwrite']) ? ($options['overwrite'] ? 'true' : 'false') : null,
        ], $options['idempotencyKey'] ?? null);
    }

    /**
     * Sends what the server has not got yet of a resumable upload, from its offset; answers the stored File.
     *
     * @param (callable(int, ?int): void)|null $onProgress
     * @return array<string, mixed>
     */
    public function resumeUpload(string $location, string $path, ?callable $onProgress = null): array
    {
        return $this->get(Tus::resume($this->http, $location, UploadSource::open($path), $this->resumableChunk, $onProgress));
    }

    /** Gives up a resumable upload: deletes it with the bytes sent so far, and its reserved quota is given back. */
    public function abortUpload(string $location): void
    {
        Tus::terminate($this->http, $location);
    }

    /**
     * One page of the files of a folder (the root by default): page, per_page, folder_id, sort, type, search, and cursor
     * (the pagination's next_cursor of the page before, with the same filters).
     *
     * @param array<string, mixed> $query
     */
    public function list(array $query = []): Page
    {
        return $this->fetchPage('/v1/files', $query);
    }

    /**
     * Every file, page after page: `foreach ($client->files->iterate(['search' => 'report']) as $file)`.
     *
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    public function iterate(array $query = []): \Generator
    {
        return $this->eachItem('/v1/files', $query);
    }

    /** @return array<string, mixed> */
    public function get(string $fileId): array
    {
        return $this->http->data('GET', Paths::of('/v1/files/{file_id}', ['file_id' => $fileId]));
    }

    /**
     * Renames and/or moves a file: ['name' => …, 'folder_id' => … or null for the root].
     *
     * @param array<string, mixed> $changes
     * @return array<string, mixed>
     */
    public function update(string $fileId, array $changes): array
    {
        return $this->http->data('PATCH', Paths::of('/v1/files/{file_id}', ['file_id' => $fileId]), ['json' => $changes]);
    }

    /**
     * Moves a file to the trash, or with $permanent (an elevated key) deletes it for good.
     *
     * @return array<string, mixed>
     */
    public function delete(string $fileId, bool $permanent = false): array
    {
        return $this->http->data('DELETE', Paths::of('/v1/files/{file_id}', ['file_id' => $fileId]), ['query' => ['permanent' => $permanent ?: null]]);
    }

    /**
     * @param list<string> $fileIds
     * @return array<string, mixed>
     */
    public function bulkDelete(array $fileIds, ?string $idempotencyKey = null): array
    {
        return $this->http->data('POST', '/v1/files/bulk-delete', ['json' => ['file_ids' => $fileIds], 'headers' => self::idempotency($idempotencyKey)]);
    }

    /** @return array<string, mixed> */
    public function restore(string $fileId, ?string $idempotencyKey = null): array
    {
        return $this->http->data('POST', Paths::of('/v1/files/{file_id}/restore', ['file_id' => $fileId]), ['headers' => self::idempotency($idempotencyKey)]);
    }

    /**
     * Streams the file's content to a path (removed again if the download fails), a stream resource, or a callable
     * that receives each chunk. With $start (and $end), only bytes $start to $end inclusive, as HTTP Range counts them
     * ($end null: to the end; a negative $start: the last -$start bytes); a range that starts past the end throws
     * InvalidRequestException (416).
     *
     * @param string|resource|callable(string): void $destination
     */
    public function download(string $fileId, mixed $destination, ?int $start = null, ?int $end = null): void
    {
        $this->signedContent($fileId, 'download', $destination, Download::range($start, $end));
    }

    /**
     * Streams the file's thumbnail, a WebP of at most 256 x 256, to a destination as download() does the content.
     * Images, videos and PDFs get one shortly after their upload (a background job); until then, and for other types,
     * throws NotFoundException.
     *
     * @param string|resource|callable(string): void $destination
     */
    public function thumbnail(string $fileId, mixed $destination): void
    {
        $this->signedContent($fileId, 'thumbnail', $destination, []);
    }

    /**
     * @param string|resource|callable(string): void $destination
     * @param array<string, string> $range
     */
    private function signedContent(string $fileId, string $route, mixed $destination, array $range): void
    {
        // These routes take a signed link, not the key: the file's fresh download_url / thumbnail_url is that link. Its
        // signature (the query) goes to the route under this client's base URL, like every request: the link's own
        // address is the server's PUBLIC_BASE_URL, which this client may not reach, and its path repeats the prefix the
        // base URL already has.
        // A continuation after a cut takes a fresh link too: a long download (gigabytes over a slow line) outlives its
        // link's hour.
        $signedPath = function () use ($fileId, $route): string {
            $link = $this->get($fileId)[$route . '_url'] ?? null;
            if (!is_string($link)) {
                throw new NotFoundException('not_found', "File $fileId has no thumbnail (not yet made, or its type gets none)", 404);
            }
            return Paths::of("/v1/files/{file_id}/$route", ['file_id' => $fileId]) . '?' . (string) parse_url($link, PHP_URL_QUERY);
        };
        $path = $signedPath();
        Download::to($destination, fn (callable $sink) => $this->http->send('GET', $path, [
            'anonymous' => true,
            'headers' => ['Accept' => '*/*'] + $range,
            'sink' => $sink,
            'refreshPath' => $signedPath,
        ]));
    }
}
