<?php

declare(strict_types=1);

namespace FileStorage\Exception;

class ShareExpiredException extends FileStorageException
{
}
