<?php

declare(strict_types=1);

namespace FileStorage\Exception;

class TimeoutException extends FileStorageException
{
}
