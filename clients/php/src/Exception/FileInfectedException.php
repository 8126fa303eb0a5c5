<?php

declare(strict_types=1);

namespace FileStorage\Exception;

class FileInfectedException extends FileStorageException
{
}
