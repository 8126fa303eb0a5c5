<?php

declare(strict_types=1);

namespace FileStorage\Upload;

use FileStorage\Http\BodyReader;
use FileStorage\Http\RequestBody;

/**
 * A multipart/form-data body produced as a stream: the fields, then the file's bytes as they are read, then the
 * closing boundary. The file is never held whole in memory.
 */
final class MultipartBody implements BodyReader
{
    /** @var list<BodyReader> */
    private array $parts;
    private int $loaded = 0;

    /**
     * @param array<string, string|null> $fields
     * @param (callable(int, ?int): void)|null $onProgress
     */
    public static function build(UploadSource $source, string $filename, array $fields, ?callable $onProgress = null): RequestBody
    {
        $boundary = '----FileStoragePhp' . bin2hex(random_bytes(16));
        $head = '';
        foreach ($fields as $key => $value) {
            if ($value !== null) {
                $head .= "--$boundary\r\nContent-Disposition: form-data; name=\"$key\"\r\n\r\n$value\r\n";
            }
        }
        $head .= "--$boundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" . self::escape($filename) . "\"\r\n"
            . "Content-Type: application/octet-stream\r\n\r\n";
        $tail = "\r\n--$boundary--\r\n";
        return new RequestBody(
            static fn (): BodyReader => new self($head, $source->reader(), $tail, $source->size, $onProgress),
            $source->size === null ? null : strlen($head) + $source->size + strlen($tail),
            "multipart/form-data; boundary=$boundary",
            $source->replayable(),
        );
    }

    /** Quotes and CR/LF would end the header early; the server reads the name from the `filename` parameter. */
    public static function escape(string $filename): string
    {
        return (string) preg_replace_callback('/["\r\n\\\\]/', static fn ($m) => sprintf('%%%02X', ord($m[0])), $filename);
    }

    /** @param (callable(int, ?int): void)|null $onProgress */
    private function __construct(string $head, private readonly BodyReader $file, string $tail, private readonly ?int $total, private $onProgress)
    {
        $this->parts = [new \FileStorage\Http\StringReader($head), $file, new \FileStorage\Http\StringReader($tail)];
    }

    public function read(int $length): string
    {
        while ($this->parts !== []) {
            $part = $this->parts[0];
            $bytes = $part->read($length);
            if ($bytes === '') {
                array_shift($this->parts);
                continue;
            }
            if ($part === $this->file) {
                $this->loaded += strlen($bytes);
                if ($this->onProgress !== null) {
                    ($this->onProgress)($this->loaded, $this->total);
                }
            }
            return $bytes;
        }
        return '';
    }

    public function close(): void
    {
        $this->file->close();
    }
}
