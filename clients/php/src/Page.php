<?php

declare(strict_types=1);

namespace FileStorage;

/**
 * One page of a listing: its items (`data`, arrays as the API sends them) and `pagination`
 * (page, per_page, total_items, total_pages, and next_cursor where the listing also pages by cursor).
 *
 * @implements \IteratorAggregate<int, array<string, mixed>>
 */
final class Page implements \IteratorAggregate, \Countable
{
    /**
     * @param list<array<string, mixed>> $data
     * @param array<string, int|string|null> $pagination
     */
    public function __construct(public readonly array $data, public readonly array $pagination)
    {
    }

    public function isLastPage(): bool
    {
        return $this->data === [] || $this->pagination['page'] >= $this->pagination['total_pages'];
    }

    public function getIterator(): \ArrayIterator
    {
        return new \ArrayIterator($this->data);
    }

    public function count(): int
    {
        return count($this->data);
    }
}
