<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;

final class User
{
    public function __construct(private readonly HttpClient $http)
    {
    }

    /**
     * The account, its plan, storage use and limits, and the calling key.
     *
     * @return array<string, mixed>
     */
    public function info(): array
    {
        return $this->http->data('GET', '/v1/user/info');
    }
}
