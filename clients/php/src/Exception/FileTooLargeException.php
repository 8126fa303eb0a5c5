<?php

declare(strict_types=1);

namespace FileStorage\Exception;

class FileTooLargeException extends FileStorageException
{
    public function getFileSize(): ?int
    {
        return $this->detail('file_size');
    }

    public function getMaxSize(): ?int
    {
        return $this->detail('max_size');
    }

    public function getPlan(): ?string
    {
        return $this->detail('plan');
    }
}
