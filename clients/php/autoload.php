<?php

declare(strict_types=1);

// PSR-4 autoloader for using the library without Composer (`require 'clients/php/autoload.php';`).
// With Composer, its own autoloader reads the same mapping from composer.json.
spl_autoload_register(static function (string $class): void {
    $prefix = 'FileStorage\\';
    if (!str_starts_with($class, $prefix)) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
