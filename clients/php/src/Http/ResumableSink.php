<?php

declare(strict_types=1);

namespace FileStorage\Http;

/**
 * The caller's sink of a download, counting what it was given: a retry after bytes reached it asks only for the rest
 * (Range from the count, If-Range with the first answer's ETag) and passes on nothing but that rest, so the sink
 * never sees a byte twice. A download of a range (206) continues the same way, within the bytes its first answer's
 * Content-Range named.
 */
final class ResumableSink
{
    private int $written = 0;
    private ?string $etag = null;
    /** Whether the current attempt's answer was checked (at its first chunk). */
    private bool $checked = false;
    /** Why the current attempt's answer could not continue the body, if it could not. */
    private ?string $refusal = null;
    /** The first and last byte of the file the first answer carries (null: to the end of the file). */
    private int $first = 0;
    private ?int $last = null;

    /** @param callable(string): void $sink */
    public function __construct(private readonly mixed $sink)
    {
    }

    /**
     * The headers of the next attempt: none while nothing was written, else the range still missing.
     *
     * @return array<string, string>
     */
    public function beginAttempt(): array
    {
        $this->checked = false;
        $this->refusal = null;
        if ($this->written === 0) {
            return [];
        }
        return ['Range' => 'bytes=' . ($this->first + $this->written) . '-' . ($this->last ?? ''), 'If-Range' => (string) $this->etag];
    }

    /**
     * Hands one chunk of a successful answer to the sink; false (abort the transfer) when this answer does not
     * continue the bytes already written.
     *
     * @param array<string, string> $headers lower-case names
     */
    public function write(int $status, array $headers, string $chunk): bool
    {
        if (!$this->checked) {
            $this->checked = true;
            if ($this->written === 0) {
                $this->etag = $headers['etag'] ?? null;
                [$first, $this->last] = $status === 206 ? self::range($headers['content-range'] ?? '') : [0, null];
                $this->first = $first ?? 0;
            } elseif ($status !== 206 || self::range($headers['content-range'] ?? '')[0] !== $this->first + $this->written) {
                $this->refusal = 'the file changed on the server since the download began';
                return false;
            }
        }
        ($this->sink)($chunk);
        $this->written += strlen($chunk);
        return true;
    }

    public function written(): int
    {
        return $this->written;
    }

    /** Why what is missing cannot be asked for, or null when a retry can resume after the bytes written. */
    public function whyNotResumable(): ?string
    {
        if ($this->written === 0) {
            return null;
        }
        if ($this->refusal !== null) {
            return $this->refusal;
        }
        // If-Range takes a strong validator only; without one the rest could come from another version of the file.
        if ($this->etag === null || str_starts_with($this->etag, 'W/')) {
            return 'the answer had no strong ETag to resume it by';
        }
        return null;
    }

    /**
     * The first and last byte a 206's Content-Range names ("bytes 7-9/10"), or [null, null].
     *
     * @return array{0: ?int, 1: ?int}
     */
    private static function range(string $contentRange): array
    {
        return preg_match('#^bytes\s+(\d+)-(\d+)/#i', trim($contentRange), $match) === 1 ? [(int) $match[1], (int) $match[2]] : [null, null];
    }
}
