<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;
use FileStorage\Page;

final class Trash
{
    use Listing;

    public function __construct(HttpClient $http)
    {
        $this->http = $http;
    }

    /** @param array<string, mixed> $query page, per_page, sort, search, cursor */
    public function list(array $query = []): Page
    {
        return $this->fetchPage('/v1/trash', $query);
    }

    /**
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    public function iterate(array $query = []): \Generator
    {
        return $this->eachItem('/v1/trash', $query);
    }

    /**
     * Deletes every file in the trash for good.
     *
     * @return array<string, mixed>
     */
    public function empty(): array
    {
        return $this->http->data('DELETE', '/v1/trash');
    }
}
