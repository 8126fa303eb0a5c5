<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;
use FileStorage\Page;

/** The listing helpers every resource with a listing route shares. */
trait Listing
{
    private HttpClient $http;

    /** @param array<string, mixed> $query */
    private function fetchPage(string $path, array $query): Page
    {
        $envelope = $this->http->send('GET', $path, ['query' => $query])->json();
        return new Page($envelope['data'], $envelope['pagination']);
    }

    /**
     * Every item of a listing, page after page, from the page in $query (default 1) to the last. Where the server
     * answers a `next_cursor`, the following pages are asked by cursor, which never repeats or skips an item while
     * others add and delete; otherwise by page number.
     *
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    private function eachItem(string $path, array $query): \Generator
    {
        $page = $this->fetchPage($path, $query);
        $number = (int) ($query['page'] ?? 1);
        while (true) {
            // Not `yield from`: it would give every page the keys 0, 1…, and iterator_to_array() would keep the last page.
            foreach ($page->data as $item) {
                yield $item;
            }
            if (array_key_exists('next_cursor', $page->pagination)) {
                if ($page->pagination['next_cursor'] === null) {
                    return;
                }
                $byCursor = $query;
                unset($byCursor['page']);
                $page = $this->fetchPage($path, ['cursor' => $page->pagination['next_cursor']] + $byCursor);
            } else {
                if ($page->isLastPage()) {
                    return;
                }
                $page = $this->fetchPage($path, ['page' => ++$number] + $query);
            }
        }
    }

    /** @return array<string, string> */
    private static function idempotency(?string $key): array
    {
        return $key === null ? [] : ['Idempotency-Key' => $key];
    }
}
