<?php

declare(strict_types=1);

namespace FileStorage\Upload;

use FileStorage\Http\BodyReader;

/**
 * What Files::upload takes, opened: its name and size when known, and its bytes, again if they can be reopened.
 * A path can be read again (for a retry or a tus chunk); a caller's stream resource only once.
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
            $size = $seekable ? $stat['size'] - (int) ftell($source) : null;
            $name = isset($meta['uri']) && is_string($meta['uri']) && is_file($meta['uri']) ? basename($meta['uri']) : null;
            return new self($name, $size, null, $source);
        }
        throw new \InvalidArgumentException('upload takes a file path or a readable stream resource.');
    }

    public function replayable(): bool
    {
        return $this->path !== null;
    }

    /** A reader of the whole source; the caller closes it. A caller's stream is read once, from where it is. */
    public function reader(): BodyReader
    {
        if ($this->path !== null) {
            return new StreamReader(fopen($this->path, 'rb'), true);
        }
        if ($this->used) {
            throw new \LogicException('A stream source can be read only once.');
        }
        $this->used = true;
        return new StreamReader($this->stream, false);
    }

    /** Bytes [start, end) of a path, read into memory: one tus chunk, bounded by the chunk size. */
    public function chunk(int $start, int $end): string
    {
        $handle = fopen((string) $this->path, 'rb');
        try {
            fseek($handle, $start);
            $bytes = '';
            while (strlen($bytes) < $end - $start && !feof($handle)) {
                $bytes .= (string) fread($handle, $end - $start - strlen($bytes));
            }
            return $bytes;
        } finally {
            fclose($handle);
        }
    }
}
