<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;
use FileStorage\Page;

final class ApiKeys
{
    use Listing;

    public function __construct(HttpClient $http)
    {
        $this->http = $http;
    }

    /**
     * Creates a key (name, scopes, elevated); the answer shows the key itself this once.
     *
     * @param array<string, mixed> $key
     * @return array<string, mixed>
     */
    public function create(array $key, ?string $idempotencyKey = null): array
    {
        return $this->http->data('POST', '/v1/api-keys', ['json' => $key, 'headers' => self::idempotency($idempotencyKey)]);
    }

    /** @param array<string, mixed> $query */
    public function list(array $query = []): Page
    {
        return $this->fetchPage('/v1/api-keys', $query);
    }

    /**
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    public function iterate(array $query = []): \Generator
    {
        return $this->eachItem('/v1/api-keys', $query);
    }

    /** @return array<string, mixed> */
    public function revoke(string $keyId): array
    {
        return $this->http->data('DELETE', Paths::of('/v1/api-keys/{key_id}', ['key_id' => $keyId]));
    }
}
