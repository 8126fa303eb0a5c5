<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;

/** The account's event feed: every change, oldest first, from a cursor (GET /v1/events). */
final class Events
{
    public function __construct(private readonly HttpClient $http)
    {
    }

    /**
     * One batch: ['data' => [events], 'next_cursor' => cursor]. Options: after, limit, types (list or comma
     * string), wait (seconds to hold the request open until an event arrives, 0..30).
     *
     * @param array<string, mixed> $options
     * @return array<string, mixed>
     */
    public function list(array $options = []): array
    {
        if (is_array($options['types'] ?? null)) {
            $options['types'] = implode(',', $options['types']);
        }
        return $this->http->send('GET', '/v1/events', ['query' => $options])->json();
    }

    /**
     * Every event from $after on, tailing the feed with long polls, in batches of up to $limit events (the server's
     * default: 100). With $stopWhenIdle it ends at the first empty batch, and the generator's return value is the
     * cursor to continue from.
     *
     * @param list<string>|null $types
     * @return \Generator<int, array<string, mixed>, mixed, ?string>
     */
    public function iterate(?string $after = null, ?array $types = null, int $wait = 30, bool $stopWhenIdle = false, ?int $limit = null): \Generator
    {
        $cursor = $after;
        while (true) {
            $batch = $this->list(['after' => $cursor, 'types' => $types, 'limit' => $limit, 'wait' => $stopWhenIdle ? 0 : $wait]);
            // Not `yield from`: it would give every batch the keys 0, 1…, and iterator_to_array() would keep the last.
            foreach ($batch['data'] as $event) {
                yield $event;
            }
            $cursor = $batch['next_cursor'];
            if ($stopWhenIdle && $batch['data'] === []) {
                return $cursor;
            }
        }
    }

    /**
     * Every event from $after on, as they happen, with the cursor to resume from once the loop stops (EventTail):
     * `foreach ($tail = $client->events->tail($saved) as $event) { …; break; }` then `$saved = $tail->cursor()`.
     *
     * @param list<string>|null $types
     */
    public function tail(?string $after = null, ?array $types = null, int $wait = 30, ?int $limit = null): EventTail
    {
        return new EventTail($this, $after, $types, $wait, $limit);
    }
}
