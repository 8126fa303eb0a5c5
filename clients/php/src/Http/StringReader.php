<?php

declare(strict_types=1);

namespace FileStorage\Http;

final class StringReader implements BodyReader
{
    private int $position = 0;

    public function __construct(private readonly string $bytes)
    {
    }

    public function read(int $length): string
    {
        $slice = substr($this->bytes, $this->position, $length);
        $this->position += strlen($slice);
        return $slice;
    }

    public function close(): void
    {
    }
}
