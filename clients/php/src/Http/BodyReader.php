<?php

declare(strict_types=1);

namespace FileStorage\Http;

/** Bytes of a request body, read in slices as curl asks for them. */
interface BodyReader
{
    /** At most $length bytes; '' at the end. */
    public function read(int $length): string;

    public function close(): void;
}
