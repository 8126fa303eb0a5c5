<?php

declare(strict_types=1);

// A TCP proxy to the server under test, run as its own process by the conformance runner (PHP has no threads):
// `php cutting_proxy.php <host> <port>` prints "port <n>", then obeys lines on stdin: "cut <bytes>" forwards that
// many more bytes from clients to the server and then closes that connection on both sides, as a dropped network
// would (then it passes everything again); "cutdown <bytes>" does the same with the bytes from the server to clients
// (an answer cut off in its body); "cuts" prints "cuts <count>".

[$_, $host, $port] = $argv;
$listener = stream_socket_server('tcp://127.0.0.1:0');
echo 'port ', explode(':', stream_socket_get_name($listener, false))[1], "\n";
/** Bytes still passed before the cut, by direction: from clients (true) or from the server (false). */
$budgets = [true => null, false => null];
$cuts = 0;
/** @var array<int, array{0: resource, 1: bool}> $peers socket id => [the other end, whether this end is the client] */
$peers = [];
$sockets = [];

function closePair(int $id): void
{
    global $peers, $sockets;
    if (!isset($peers[$id])) {
        return;
    }
    $other = $peers[$id][0];
    $otherId = (int) $other;
    foreach ([$id, $otherId] as $each) {
        if (isset($sockets[$each])) {
            @stream_socket_shutdown($sockets[$each], STREAM_SHUT_RDWR);
            @fclose($sockets[$each]);
        }
        unset($sockets[$each], $peers[$each]);
    }
}

while (true) {
    $read = [$listener, STDIN, ...array_values($sockets)];
    $write = $except = null;
    if (@stream_select($read, $write, $except, null) === false) {
        break;
    }
    foreach ($read as $stream) {
        if ($stream === $listener) {
            $client = stream_socket_accept($listener);
            $server = stream_socket_client("tcp://$host:$port");
            $sockets[(int) $client] = $client;
            $sockets[(int) $server] = $server;
            $peers[(int) $client] = [$server, true];
            $peers[(int) $server] = [$client, false];
        } elseif ($stream === STDIN) {
            $line = fgets(STDIN);
            if ($line === false) {
                exit(0);
            }
            if (preg_match('/^cut(down)? (\d+)/', $line, $m) === 1) {
                $budgets[$m[1] === ''] = (int) $m[2];
                echo "armed\n";
            } elseif (str_starts_with($line, 'cuts')) {
                echo "cuts $cuts\n";
            }
        } elseif (isset($peers[(int) $stream])) {
            [$other, $fromClient] = $peers[(int) $stream];
            $chunk = fread($stream, 65536);
            if ($chunk === '' || $chunk === false) {
                closePair((int) $stream);
                continue;
            }
            $cut = false;
            if ($budgets[$fromClient] !== null) {
                if (strlen($chunk) >= $budgets[$fromClient]) {
                    $chunk = substr($chunk, 0, $budgets[$fromClient]);
                    $budgets[$fromClient] = null;
                    $cuts++;
                    $cut = true;
                } else {
                    $budgets[$fromClient] -= strlen($chunk);
                }
            }
            for ($sent = 0; $sent < strlen($chunk);) {
                $written = @fwrite($other, substr($chunk, $sent));
                if ($written === false || $written === 0) {
                    break;
                }
                $sent += $written;
            }
            if ($cut) {
                closePair((int) $stream);
            }
        }
    }
}
