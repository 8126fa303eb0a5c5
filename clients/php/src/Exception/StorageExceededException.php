<?php

declare(strict_types=1);

namespace FileStorage\Exception;

class StorageExceededException extends FileStorageException
{
    public function getCurrentUsage(): ?int
    {
        return $this->detail('current_usage');
    }

    public function getStorageLimit(): ?int
    {
        return $this->detail('storage_limit');
    }

    public function getRequiredSpace(): ?int
    {
        return $this->detail('required_space');
    }
}
