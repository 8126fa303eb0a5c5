<?php

declare(strict_types=1);

namespace FileStorage\Resource;

/**
 * The tail of the event feed: every event from a cursor on, as they happen (long polls of $wait seconds); iterating
 * never ends by itself. cursor() is where to resume: after the last event handed out when the loop stopped at the last
 * event of a batch (as a long poll's single event usually is), else at the start of the batch it left.
 *
 * @implements \IteratorAggregate<int, array<string, mixed>>
 */
final class EventTail implements \IteratorAggregate
{
    /** @param list<string>|null $types */
    public function __construct(
        private readonly Events $events,
        private ?string $cursor,
        private readonly ?array $types,
        private readonly int $wait,
        private readonly ?int $limit,
    ) {
    }

    public function cursor(): ?string
    {
        return $this->cursor;
    }

    /** @return \Generator<int, array<string, mixed>> */
    public function getIterator(): \Generator
    {
        while (true) {
            $batch = $this->events->list(['after' => $this->cursor, 'types' => $this->types, 'limit' => $this->limit, 'wait' => $this->wait]);
            $last = count($batch['data']) - 1;
            if ($last < 0) {
                $this->cursor = $batch['next_cursor'];
            }
            foreach ($batch['data'] as $index => $event) {
                // Moved before the batch's last event is handed out, so a loop that stops at it resumes after it.
                if ($index === $last) {
                    $this->cursor = $batch['next_cursor'];
                }
                yield $event;
            }
        }
    }
}
