<?php

declare(strict_types=1);

namespace FileStorage\Resource;

/** Streams a download into a path, a stream resource or a callable; a path is removed again when the download fails. */
final class Download
{
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
