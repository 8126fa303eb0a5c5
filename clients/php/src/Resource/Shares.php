<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;
use FileStorage\Page;

final class Shares
{
    use Listing;

    public function __construct(HttpClient $http)
    {
        $this->http = $http;
    }

    /**
     * @param array<string, mixed> $share file_id, and optionally password, expires_in (seconds)
     * @return array<string, mixed>
     */
    public function create(array $share, ?string $idempotencyKey = null): array
    {
        return $this->http->data('POST', '/v1/shares', ['json' => $share, 'headers' => self::idempotency($idempotencyKey)]);
    }

    /**
     * Each link with its status and analytics, as get() answers it (active, revoked_at, invalidated_at, access_count,
     * last_accessed_at), revoked and expired links too.
     *
     * @param array<string, mixed> $query page, per_page, cursor, file_id
     */
    public function list(array $query = []): Page
    {
        return $this->fetchPage('/v1/shares', $query);
    }

    /**
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    public function iterate(array $query = []): \Generator
    {
        return $this->eachItem('/v1/shares', $query);
    }

    /**
     * One share link with its status and analytics (active, revoked_at, access_count, …); revoked and expired links too.
     *
     * @return array<string, mixed>
     */
    public function get(string $shareId): array
    {
        return $this->http->data('GET', Paths::of('/v1/shares/{share_id}', ['share_id' => $shareId]));
    }

    /** @return array<string, mixed> */
    public function revoke(string $shareId): array
    {
        return $this->http->data('DELETE', Paths::of('/v1/shares/{share_id}', ['share_id' => $shareId]));
    }

    /**
     * What a share link shows its visitor, without an API key. Takes the share's url or its token.
     *
     * @return array<string, mixed>
     */
    public function open(string $urlOrToken, ?string $password = null): array
    {
        return $this->http->data('GET', '/s/' . Paths::shareToken($urlOrToken), ['anonymous' => true, 'headers' => self::passwordHeader($password)]);
    }

    /**
     * The shared file's content as a visitor downloads it, to a path, a stream resource or a callable; with $start and
     * $end, only those bytes, as Files::download() takes them.
     *
     * @param string|resource|callable(string): void $destination
     */
    public function download(string $urlOrToken, mixed $destination, ?string $password = null, ?int $start = null, ?int $end = null): void
    {
        $path = '/s/' . Paths::shareToken($urlOrToken) . '/download';
        $headers = ['Accept' => '*/*'] + self::passwordHeader($password) + Download::range($start, $end);
        Download::to($destination, fn (callable $sink) => $this->http->send('GET', $path, ['anonymous' => true, 'headers' => $headers, 'sink' => $sink]));
    }

    /** @return array<string, string> */
    private static function passwordHeader(?string $password): array
    {
        return $password === null ? [] : ['X-Share-Password' => $password];
    }
}
