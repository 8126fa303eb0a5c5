<?php

declare(strict_types=1);

namespace FileStorage\Exception;

class IdempotencyException extends FileStorageException
{
}
