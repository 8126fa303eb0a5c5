<?php

declare(strict_types=1);

// Runs every PHP example of README.md, in order and as written, against the live server named by
// FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY: only the origins and the autoloader's path are swapped, in a
// scratch folder holding the files the examples name. Webhook deliveries go to a loopback port that answers 200.

$readme = file_get_contents(__DIR__ . '/../README.md');
preg_match_all('/```php\n(.*?)```/s', $readme, $matches);
$blocks = $matches[1];
if (count($blocks) < 9) {
    fwrite(STDERR, 'FAILED: found only ' . count($blocks) . " examples\n");
    exit(1);
}

$receiver = stream_socket_server('tcp://127.0.0.1:0');
$hookUrl = 'http://' . stream_socket_get_name($receiver, false) . '/hooks';
// The examples run in a child PHP process while this one answers the deliveries.
$program = implode("\n", array_map(static fn (string $code) => preg_replace('/^<\?php\n/', '', $code), $blocks));
$program = "<?php\n" . strtr($program, [
    "require 'vendor/autoload.php';" => 'require ' . var_export(realpath(__DIR__ . '/../autoload.php'), true) . ';',
    'https://files.example.com' => getenv('FILE_STORAGE_BASE_URL'),
    'https://example.com/hooks' => $hookUrl,
]);
$dir = sys_get_temp_dir() . '/fss-php-readme-' . bin2hex(random_bytes(4));
mkdir($dir);
foreach (['report.pdf', 'video.mp4'] as $name) {
    file_put_contents("$dir/$name", "the bytes of $name\n");
}
file_put_contents("$dir/readme.php", $program);
$child = proc_open([PHP_BINARY, 'readme.php'], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $dir);
stream_set_blocking($pipes[1], false);
stream_set_blocking($pipes[2], false);
$output = '';
while (true) {
    $read = [$pipes[1], $pipes[2], $receiver];
    $write = $except = null;
    if (stream_select($read, $write, $except, 1) > 0) {
        foreach ($read as $stream) {
            if ($stream === $receiver) {
                $socket = stream_socket_accept($receiver, 1);
                if ($socket !== false) {
                    fread($socket, 65536);
                    fwrite($socket, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    fclose($socket);
                }
            } else {
                $output .= (string) fread($stream, 65536);
            }
        }
    }
    // proc_get_status() tells the exit code once only, on the first call after the child ended.
    $status = proc_get_status($child);
    if (!$status['running']) {
        $output .= stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
        break;
    }
}
$code = $status['exitcode'];
proc_close($child);
$ok = $code === 0
    && str_contains($output, 'report.pdf')
    && file_get_contents("$dir/copy.pdf") === "the bytes of report.pdf\n"
    && file_get_contents("$dir/shared.pdf") === "the bytes of report.pdf\n";
array_map('unlink', glob("$dir/*"));
rmdir($dir);
echo $ok ? "ok the README examples run as written\n" : "FAILED the README examples (exit $code):\n$output\n";
exit($ok ? 0 : 1);
