<?php

declare(strict_types=1);

namespace FileStorage\Http;

/**
 * A request body that can be produced again for a retry, or not (a stream given by the caller). Its size is null
 * when unknown (then it is sent chunked).
 */
final class RequestBody
{
    /** @param \Closure(): BodyReader $opener */
    public function __construct(
        private readonly \Closure $opener,
        public readonly ?int $size,
        public readonly ?string $contentType,
        public readonly bool $replayable,
    ) {
    }

    public function open(): BodyReader
    {
        return ($this->opener)();
    }
}
