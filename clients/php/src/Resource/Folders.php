<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;
use FileStorage\Page;

final class Folders
{
    use Listing;

    public function __construct(HttpClient $http)
    {
        $this->http = $http;
    }

    /** @return array<string, mixed> */
    public function create(string $name, ?string $parentId = null, ?string $idempotencyKey = null): array
    {
        $body = ['name' => $name] + ($parentId === null ? [] : ['parent_id' => $parentId]);
        return $this->http->data('POST', '/v1/folders', ['json' => $body, 'headers' => self::idempotency($idempotencyKey)]);
    }

    /** @param array<string, mixed> $query page, per_page, parent_id, sort, search, cursor */
    public function list(array $query = []): Page
    {
        return $this->fetchPage('/v1/folders', $query);
    }

    /**
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    public function iterate(array $query = []): \Generator
    {
        return $this->eachItem('/v1/folders', $query);
    }

    /**
     * One folder; following parent_id up to null gives its path from the root.
     *
     * @return array<string, mixed>
     */
    public function get(string $folderId): array
    {
        return $this->http->data('GET', Paths::of('/v1/folders/{folder_id}', ['folder_id' => $folderId]));
    }

    /**
     * Renames and/or moves a folder: ['name' => …, 'parent_id' => … or null for the root].
     *
     * @param array<string, mixed> $changes
     * @return array<string, mixed>
     */
    public function update(string $folderId, array $changes): array
    {
        return $this->http->data('PATCH', Paths::of('/v1/folders/{folder_id}', ['folder_id' => $folderId]), ['json' => $changes]);
    }

    /** @return array<string, mixed> */
    public function delete(string $folderId): array
    {
        return $this->http->data('DELETE', Paths::of('/v1/folders/{folder_id}', ['folder_id' => $folderId]));
    }
}
