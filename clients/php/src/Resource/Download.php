<?php

declare(strict_types=1);

namespace FileStorage\Resource;

/** Streams a download into a path, a stream resource or a callable; a path is removed again when the download fails. */
final class Download
{
    /**
     * The Range header of bytes $start to $end inclusive ($end null: to the end of the file; a negative $start: the last
     * -$start bytes), or none without $start.
     *
     * @return array<string, string>
     */
    public static function range(?int $start, ?int $end): array
    {
        if ($start === null) {
            if ($end !== null) {
                throw new \InvalidArgumentException('A range needs a start (an end alone says nothing about where it begins).');
            }
            return [];
        }
        if ($start < 0) {
            if ($end !== null) {
                throw new \InvalidArgumentException('A negative start takes the last bytes of the file; it takes no end.');
            }
            return ['Range' => "bytes=$start"];
        }
        if ($end !== null && $end < 0) {
            throw new \InvalidArgumentException('The end is the index of the last byte wanted: 0 or more.');
        }
        return ['Range' => "bytes=$start-" . ($end ?? '')];
    }

    /**
     * @param string|resource|callable(string): void $destination
     * @param callable(callable(string): void): void $fetch sends the request with the given sink
     */
    public static function to(mixed $destination, callable $fetch): void
    {
        if (is_string($destination)) {
            $handle = fopen($destination, 'wb');
            if ($handle === false) {
                throw new \InvalidArgumentException("download: cannot write $destination");
            }
            try {
                $fetch(static function (string $chunk) use ($handle): void {
                    fwrite($handle, $chunk);
                });
                fclose($handle);
            } catch (\Throwable $error) {
                fclose($handle);
                @unlink($destination);
                throw $error;
            }
        } elseif (is_resource($destination)) {
            $fetch(static function (string $chunk) use ($destination): void {
                fwrite($destination, $chunk);
            });
        } elseif (is_callable($destination)) {
            $fetch($destination);
        } else {
            throw new \InvalidArgumentException('download needs a path, a stream resource or a callable.');
        }
    }
}
