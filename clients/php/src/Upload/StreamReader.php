<?php

declare(strict_types=1);

namespace FileStorage\Upload;

use FileStorage\Http\BodyReader;

/** Reads a stream resource; closes it only if it owns it. */
final class StreamReader implements BodyReader
{
    /** @param resource $stream */
    public function __construct(private $stream, private readonly bool $owned)
    {
    }

    public function read(int $length): string
    {
        if (feof($this->stream)) {
            return '';
        }
        return (string) fread($this->stream, $length);
    }

    public function close(): void
    {
        if ($this->owned && is_resource($this->stream)) {
            fclose($this->stream);
        }
    }
}
