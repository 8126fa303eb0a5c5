<?php

declare(strict_types=1);

namespace FileStorage;

use FileStorage\Http\HttpClient;
use FileStorage\Resource\ApiKeys;
use FileStorage\Resource\Events;
use FileStorage\Resource\Files;
use FileStorage\Resource\Folders;
use FileStorage\Resource\Shares;
use FileStorage\Resource\Trash;
use FileStorage\Resource\User;
use FileStorage\Resource\Webhooks;

/**
 * The File Storage Service API: one object per account key, every resource hanging off it.
 *
 *     $client = new FileStorage\Client(getenv('FILE_STORAGE_API_KEY'), 'https://files.example.com');
 *     $file = $client->files->upload('report.pdf');
 */
final class Client
{
    public const MIB = 1024 * 1024;

    public readonly Files $files;
    public readonly Trash $trash;
    public readonly Folders $folders;
    public readonly Shares $shares;
    public readonly Webhooks $webhooks;
    public readonly ApiKeys $apiKeys;
    public readonly User $user;
    public readonly Events $events;

    /**
     * $baseUrl: where the server answers, with its path when a reverse proxy mounts it under one; $timeout: seconds
     * without progress before an attempt fails (default 60); $maxRetries: after 429, 409 idempotency_key_in_use, 502,
     * 503, 504 and network errors (default 2; a resumable upload retries for up to Tus::RETRY_SECONDS instead, unless
     * it is 0, when it still waits that long for a locked upload); files of at least $resumableThreshold bytes
     * (default 64 MiB) go through the resumable tus endpoint in chunks of $resumableChunk bytes (default 8 MiB).
     */
    public function __construct(
        #[\SensitiveParameter] string $apiKey,
        string $baseUrl,
        int $timeout = 60,
        int $maxRetries = 2,
        int $resumableThreshold = 64 * self::MIB,
        int $resumableChunk = 8 * self::MIB,
    ) {
        $http = new HttpClient($apiKey, $baseUrl, $timeout, $maxRetries);
        $this->files = new Files($http, $resumableThreshold, $resumableChunk);
        $this->trash = new Trash($http);
        $this->folders = new Folders($http);
        $this->shares = new Shares($http);
        $this->webhooks = new Webhooks($http);
        $this->apiKeys = new ApiKeys($http);
        $this->user = new User($http);
        $this->events = new Events($http);
    }
}
