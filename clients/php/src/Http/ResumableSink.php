<?php

declare(strict_types=1);

namespace FileStorage\Http;

/**
 * The caller's sink of a download, counting what it was given: a retry after bytes reached it asks only for the rest
 * (Range from the count, If-Range with the first answer's ETag) and passes on nothing but that rest, so the sink
 * never sees a byte twice. A download of a range (206) continues the same way, within the bytes its first answer's
 * Content-Range named.
 *
 * A proxy or cache that does not do ranges answers 200 with the whole file: the bytes before the ones asked for are
 * skipped and the transfer ends after them (complete()), so the sink gets exactly the range, or the rest, asked for.
 */
final class ResumableSink
{
    private int $written = 0;
    private ?string $etag = null;
    /** Whether the current attempt's answer was checked (at its first chunk). */
    private bool $checked = false;
    /** Why the current attempt's answer could not continue the body, if it could not. */
    private ?string $refusal = null;
    /** The first and last byte of the file to give the sink (null: to the end of the file), once the first answer said. */
    private int $first = 0;
    private ?int $last = null;
    /** Of the current answer: bytes to pass over before the sink's, and how many more the sink takes (null: all). */
    private int $skip = 0;
    private ?int $left = null;
    /** The range asked for: [first, last] as strings ('' when left out), from the caller's Range header; null: none. */
    private readonly ?array $asked;

    /** @param callable(string): void $sink */
    public function __construct(private readonly mixed $sink, ?string $range = null)
    {
        $this->asked = $range !== null && preg_match('/^bytes=(\d*)-(\d*)$/', $range, $match) === 1 ? [$match[1], $match[2]] : null;
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
     * continue the bytes already written, or when the sink has every byte asked for (complete()).
     *
     * @param array<string, string> $headers lower-case names
     */
    public function write(int $status, array $headers, string $chunk): bool
    {
        if (!$this->checked) {
            $this->checked = true;
            $this->refusal = $this->check($status, $headers);
            if ($this->refusal !== null) {
                return false;
            }
        }
        if ($this->skip > 0) {
            $skipped = min($this->skip, strlen($chunk));
            $this->skip -= $skipped;
            $chunk = substr($chunk, $skipped);
        }
        if ($this->left !== null) {
            $chunk = substr($chunk, 0, $this->left);
            $this->left -= strlen($chunk);
        }
        if ($chunk !== '') {
            ($this->sink)($chunk);
            $this->written += strlen($chunk);
        }
        return !$this->complete();
    }

    /** Whether the sink has every byte asked for, with more of a whole-file answer left unread. */
    public function complete(): bool
    {
        return $this->left === 0;
    }

    /**
     * Where this answer's bytes go, or why it cannot continue what the sink has.
     *
     * @param array<string, string> $headers
     */
    private function check(int $status, array $headers): ?string
    {
        $this->skip = 0;
        $this->left = null;
        if ($this->written === 0) {
            $this->etag = $headers['etag'] ?? null;
            if ($status === 206) {
                [$first, $this->last] = self::range($headers['content-range'] ?? '');
                $this->first = $first ?? 0;
                return null;
            }
            [$this->first, $this->last] = [0, null];
            if ($this->asked !== null) {
                [$first, $last] = $this->asked;
                $length = isset($headers['content-length']) ? (int) $headers['content-length'] : null;
                if ($first === '') {
                    // The last $last bytes: where they start needs the file's length.
                    if ($length === null) {
                        return "asked for the last $last bytes, the server sent the whole file without its length (a proxy that ignores Range?)";
                    }
                    [$this->first, $this->last] = [max(0, $length - (int) $last), $length - 1];
                } else {
                    [$this->first, $this->last] = [(int) $first, $last === '' ? null : (int) $last];
                }
            }
            $this->skip = $this->first;
        } elseif ($status === 206 && self::range($headers['content-range'] ?? '')[0] === $this->first + $this->written) {
            return null;
        } elseif ($status === 200 && $this->etag !== null && ($headers['etag'] ?? null) === $this->etag) {
            // A whole-file answer of the same version carries the rest too, after the bytes already written.
            $this->skip = $this->first + $this->written;
        } else {
            return 'the file changed on the server since the download began';
        }
        $this->left = $this->last === null ? null : $this->last - $this->first - $this->written + 1;
        return null;
    }

    public function written(): int
    {
        return $this->written;
    }

    /** Why what is missing cannot be asked for, or null when a retry can resume after the bytes written. */
    public function whyNotResumable(): ?string
    {
        if ($this->refusal !== null) {
            return $this->refusal;
        }
        if ($this->written === 0) {
            return null;
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
