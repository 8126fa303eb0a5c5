<?php

declare(strict_types=1);

namespace FileStorage\Upload;

use FileStorage\Http\BodyReader;

/**
 * What Files::upload takes, opened: its name and size when known, and its bytes, again if they can be reopened.
 * A path and a stream of a regular file can be read again (for a retry or a tus chunk), the stream from where it
 * stood when given; any other stream (a pipe, a socket) only once.
 */
final class UploadSource
{
    private bool $used = false;

    /** @param resource|null $stream */
    private function __construct(
        public readonly ?string $name,
        public readonly ?int $size,
        private readonly ?string $path,
        private $stream,
        /** Where a seekable stream stood when given: its bytes are sent from there. */
        private readonly ?int $origin = null,
    ) {
    }

    /** @param string|resource $source a file path or a readable stream resource */
    public static function open(mixed $source): self
    {
        if (is_string($source)) {
            if (!is_file($source) || !is_readable($source)) {
                throw new \InvalidArgumentException("upload: no readable file at $source");
            }
            return new self(basename($source), (int) filesize($source), $source, null);
        }
        if (is_resource($source) && get_resource_type($source) === 'stream') {
            $meta = stream_get_meta_data($source);
            $stat = fstat($source);
            $seekable = $meta['seekable'] && $stat !== false && ($stat['mode'] & 0170000) === 0100000;
            $origin = $seekable ? (int) ftell($source) : null;
            $size = $seekable ? $stat['size'] - $origin : null;
            $name = isset($meta['uri']) && is_string($meta['uri']) && is_file($meta['uri']) ? basename($meta['uri']) : null;
            return new self($name, $size, null, $source, $origin);
        }
        throw new \InvalidArgumentException('upload takes a file path or a readable stream resource.');
    }

    public function replayable(): bool
    {
        return $this->path !== null || $this->origin !== null;
    }

    /** A reader of the whole source; the caller closes it. A caller's stream is read once, from where it is. */
    public function reader(): BodyReader
    {
        if ($this->path !== null) {
            return new StreamReader(fopen($this->path, 'rb'), true);
        }
        if ($this->origin !== null) {
            fseek($this->stream, $this->origin);
            return new StreamReader($this->stream, false);
        }
        if ($this->used) {
            throw new \LogicException('A stream source can be read only once.');
        }
        $this->used = true;
        return new StreamReader($this->stream, false);
    }

    /** Bytes [start, end) of a path or a seekable stream, read into memory: one tus chunk, bounded by the chunk size. */
    public function chunk(int $start, int $end): string
    {
        $handle = $this->path === null ? $this->stream : fopen($this->path, 'rb');
        try {
            fseek($handle, ($this->origin ?? 0) + $start);
            $bytes = '';
            while (strlen($bytes) < $end - $start && !feof($handle)) {
                $bytes .= (string) fread($handle, $end - $start - strlen($bytes));
            }
            return $bytes;
        } finally {
            if ($this->path !== null) {
                fclose($handle);
            }
        }
    }
}
