<?php

declare(strict_types=1);

/**
 * The TCP proxy every test of this library puts between the client and a server, to be the network or the middlebox
 * in the way. It runs as its own process, since PHP has no threads: TestProxy::start() runs this file, which relays
 * every connection until its stdin closes. Each connection carries one request (the library closes its curl handle
 * after each): the proxy reads its head, counts it, then relays both ways. What it does to the requests whose request
 * line matches a pattern (a PCRE with its delimiters; any request when left out):
 *
 * - cut(): lets the next $bytes bytes (heads included, counted across connections) go to the server ('request') or
 *   to the client ('answer'), then closes that connection on both sides, as a dropped network would. Once.
 * - stall(): lets the first $bytes bytes of the next such request through, holds the rest for $seconds, then sends it
 *   ('finish') or closes the connection as a dead client would ('drop'). Once.
 * - answer(): answers them itself with a canned answer, as a captive portal or a proxy's error page does.
 * - ignoreRanges(): takes the Range and If-Range headers out of them, as a proxy or cache that does not do ranges:
 *   the server answers 200 with the whole file.
 *
 * With a prefix it serves the server under that path, as a reverse proxy mounting it there does: $url ends with the
 * prefix, which is taken off the request target on the way in, and a request outside it is answered 404.
 */
final class TestProxy
{
    private const NOT_FOUND = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 22\r\nConnection: close\r\n\r\nNot under this prefix.";

    /** @param array<int, resource> $pipes */
    private function __construct(public readonly string $url, public readonly int $port, private readonly mixed $process, private readonly array $pipes)
    {
    }

    public static function start(string $serverUrl, string $prefix = ''): self
    {
        $process = proc_open([PHP_BINARY, __FILE__, $serverUrl, $prefix], [0 => ['pipe', 'r'], 1 => ['pipe', 'w']], $pipes);
        $line = trim((string) fgets($pipes[1]));
        if (preg_match('/^port (\d+)$/', $line, $match) !== 1) {
            throw new RuntimeException("the test proxy did not start: $line");
        }
        return new self("http://127.0.0.1:{$match[1]}$prefix", (int) $match[1], $process, $pipes);
    }

    /** An HTTP/1.1 answer to give with answer(). @param array<string, string|int> $headers */
    public static function httpAnswer(string $status, array $headers, string $body = ''): string
    {
        $head = "HTTP/1.1 $status\r\n";
        foreach ($headers + ['Content-Length' => strlen($body), 'Connection' => 'close'] as $name => $value) {
            $head .= "$name: $value\r\n";
        }
        return "$head\r\n$body";
    }

    /** @param 'request'|'answer' $of */
    public function cut(string $of, int $bytes, string $pattern = '/^/'): self
    {
        return $this->arm("cut $of $bytes $pattern");
    }

    /** @param 'finish'|'drop' $then */
    public function stall(int $bytes, float $seconds, string $then, string $pattern = '/^/'): self
    {
        return $this->arm("stall $bytes $seconds $then $pattern");
    }

    public function answer(string $pattern, string $answer): self
    {
        return $this->arm('answer ' . base64_encode($answer) . " $pattern");
    }

    public function ignoreRanges(string $pattern = '/^/'): self
    {
        return $this->arm("ignore-ranges $pattern");
    }

    /** How many requests whose request line matches arrived. */
    public function count(string $pattern = '/^/'): int
    {
        return (int) substr($this->command("count $pattern"), strlen('count '));
    }

    /** How many connections were cut. */
    public function cuts(): int
    {
        return (int) substr($this->command('cuts'), strlen('cuts '));
    }

    public function close(): void
    {
        fclose($this->pipes[0]);
        proc_close($this->process);
    }

    private function arm(string $command): self
    {
        $answer = $this->command($command);
        if ($answer !== 'armed') {
            throw new RuntimeException("the test proxy refused '$command': $answer");
        }
        return $this;
    }

    private function command(string $line): string
    {
        fwrite($this->pipes[0], "$line\n");
        return trim((string) fgets($this->pipes[1]));
    }

    /** The proxy itself: `php test_proxy.php <server URL> [<prefix>]` prints "port <n>", then obeys stdin. */
    public static function run(string $serverUrl, string $prefix): void
    {
        $server = parse_url($serverUrl);
        $upstream = "tcp://{$server['host']}:{$server['port']}";
        $listener = stream_socket_server('tcp://127.0.0.1:0');
        echo 'port ', explode(':', (string) stream_socket_get_name($listener, false))[1], "\n";
        $requests = [];
        $cuts = 0;
        /** @var array{of: string, left: int, pattern: string}|null $cut */
        $cut = null;
        /** @var array{left: int, seconds: float, then: string, pattern: string}|null $stall */
        $stall = null;
        /** @var list<array{0: string, 1: string}> $answers [pattern, answer] */
        $answers = [];
        /** The pattern of the requests whose Range and If-Range are taken out, if any. */
        $rangeless = null;
        /** Per connection, by its client socket's id: client, server, head (until complete), line, stall, held, releaseAt, draining. */
        $conns = [];
        /** The connection of each socket, by socket id. */
        $owner = [];

        $close = static function (int $id) use (&$conns, &$owner): void {
            foreach (['client', 'server'] as $end) {
                $socket = $conns[$id][$end] ?? null;
                if ($socket !== null) {
                    unset($owner[(int) $socket]);
                    @stream_socket_shutdown($socket, STREAM_SHUT_RDWR);
                    @fclose($socket);
                }
            }
            unset($conns[$id]);
        };
        $write = static function ($socket, string $bytes): void {
            for ($sent = 0; $sent < strlen($bytes);) {
                $written = @fwrite($socket, substr($bytes, $sent));
                if ($written === false || $written === 0) {
                    return;
                }
                $sent += $written;
            }
        };
        // Relays bytes of a connection one way, through the armed cut; false once the connection is cut.
        $forward = static function (int $id, string $direction, string $bytes) use (&$conns, &$cut, &$cuts, $write, $close): bool {
            $conn = $conns[$id];
            $cutHere = false;
            if ($cut !== null && $cut['of'] === $direction && preg_match($cut['pattern'], $conn['line']) === 1) {
                if (strlen($bytes) < $cut['left']) {
                    $cut['left'] -= strlen($bytes);
                } else {
                    $bytes = substr($bytes, 0, $cut['left']);
                    $cut = null;
                    $cuts++;
                    $cutHere = true;
                }
            }
            $write($direction === 'request' ? $conn['server'] : $conn['client'], $bytes);
            if ($cutHere) {
                $close($id);
            }
            return !$cutHere;
        };
        // Bytes from the client to the server, held back by the connection's stall once its bytes have passed.
        $toServer = static function (int $id, string $bytes) use (&$conns, $forward): void {
            $stalled = $conns[$id]['stall'];
            if ($stalled === null) {
                $forward($id, 'request', $bytes);
                return;
            }
            $passing = substr($bytes, 0, max(0, $stalled['left']));
            $conns[$id]['stall']['left'] -= strlen($passing);
            $conns[$id]['held'] .= substr($bytes, strlen($passing));
            if ($passing !== '' && !$forward($id, 'request', $passing)) {
                return;
            }
            if ($conns[$id]['stall']['left'] <= 0 && $conns[$id]['releaseAt'] === null) {
                $conns[$id]['releaseAt'] = microtime(true) + $stalled['seconds'];
            }
        };
        // A request's head has arrived: answer it here, or open its connection to the server.
        $begin = static function (int $id) use (&$conns, &$owner, &$requests, &$answers, &$stall, &$rangeless, $prefix, $upstream, $write, $toServer): void {
            $head = $conns[$id]['head'];
            $line = (string) strstr($head, "\r\n", true);
            $requests[] = $line;
            $conns[$id]['line'] = $line;
            if ($rangeless !== null && preg_match($rangeless, $line) === 1) {
                $head = (string) preg_replace('/^(?:range|if-range):[^\r\n]*\r\n/im', '', $head);
            }
            $canned = null;
            foreach ($answers as [$pattern, $answer]) {
                if (preg_match($pattern, $line) === 1) {
                    $canned = $answer;
                    break;
                }
            }
            if ($prefix !== '') {
                [$verb, $target, $version] = array_pad(explode(' ', $line, 3), 3, '');
                if ($target === $prefix || str_starts_with($target, "$prefix/") || str_starts_with($target, "$prefix?")) {
                    $inner = substr($target, strlen($prefix));
                    $head = "$verb " . (str_starts_with($inner, '/') ? $inner : "/$inner") . " $version" . substr($head, strlen($line));
                } else {
                    $canned ??= self::NOT_FOUND;
                }
            }
            if ($canned !== null) {
                // Whatever else the client sends is read and dropped until it closes.
                $write($conns[$id]['client'], $canned);
                @stream_socket_shutdown($conns[$id]['client'], STREAM_SHUT_WR);
                $conns[$id]['draining'] = true;
                return;
            }
            if ($stall !== null && preg_match($stall['pattern'], $line) === 1) {
                $conns[$id]['stall'] = $stall;
                $stall = null;
            }
            $server = stream_socket_client($upstream);
            $conns[$id]['server'] = $server;
            $owner[(int) $server] = $id;
            $toServer($id, $head);
        };

        while (true) {
            $read = [$listener, STDIN];
            $timeout = null;
            foreach ($conns as $conn) {
                $read[] = $conn['client'];
                if ($conn['server'] !== null) {
                    $read[] = $conn['server'];
                }
                if ($conn['releaseAt'] !== null) {
                    $timeout = min($timeout ?? PHP_FLOAT_MAX, max(0.0, $conn['releaseAt'] - microtime(true)));
                }
            }
            $writable = $except = null;
            $seconds = $timeout === null ? null : (int) $timeout;
            if (@stream_select($read, $writable, $except, $seconds, $timeout === null ? null : (int) (($timeout - $seconds) * 1e6)) === false) {
                break;
            }
            foreach (array_keys($conns) as $id) {
                $conn = $conns[$id];
                if ($conn['releaseAt'] !== null && $conn['releaseAt'] <= microtime(true)) {
                    if ($conn['stall']['then'] === 'drop') {
                        $close($id);
                        continue;
                    }
                    $conns[$id]['stall'] = null;
                    $conns[$id]['releaseAt'] = null;
                    $conns[$id]['held'] = '';
                    $forward($id, 'request', $conn['held']);
                }
            }
            foreach ($read as $stream) {
                if ($stream === $listener) {
                    $client = stream_socket_accept($listener);
                    $conns[(int) $client] = ['client' => $client, 'server' => null, 'head' => '', 'line' => '', 'stall' => null, 'held' => '', 'releaseAt' => null, 'draining' => false];
                    $owner[(int) $client] = (int) $client;
                    continue;
                }
                if ($stream === STDIN) {
                    $command = fgets(STDIN);
                    if ($command === false) {
                        return;
                    }
                    $answer = 'armed';
                    if (preg_match('#^cut (request|answer) (\d+) ?(.*)$#', rtrim($command, "\n"), $m) === 1) {
                        $cut = ['of' => $m[1], 'left' => (int) $m[2], 'pattern' => $m[3] ?: '/^/'];
                    } elseif (preg_match('#^stall (\d+) ([\d.]+) (finish|drop) ?(.*)$#', rtrim($command, "\n"), $m) === 1) {
                        $stall = ['left' => (int) $m[1], 'seconds' => (float) $m[2], 'then' => $m[3], 'pattern' => $m[4] ?: '/^/'];
                    } elseif (preg_match('#^answer (\S+) ?(.*)$#', rtrim($command, "\n"), $m) === 1) {
                        $answers[] = [$m[2] ?: '/^/', (string) base64_decode($m[1], true)];
                    } elseif (preg_match('#^ignore-ranges ?(.*)$#', rtrim($command, "\n"), $m) === 1) {
                        $rangeless = $m[1] ?: '/^/';
                    } elseif (preg_match('#^count ?(.*)$#', rtrim($command, "\n"), $m) === 1) {
                        $answer = 'count ' . count(array_filter($requests, static fn (string $line) => preg_match($m[1] ?: '/^/', $line) === 1));
                    } elseif (rtrim($command, "\n") === 'cuts') {
                        $answer = "cuts $cuts";
                    } else {
                        $answer = 'unknown command';
                    }
                    echo "$answer\n";
                    continue;
                }
                if (!isset($owner[(int) $stream])) {
                    continue;
                }
                $id = $owner[(int) $stream];
                $chunk = fread($stream, 65536);
                if ($chunk === '' || $chunk === false) {
                    $close($id);
                    continue;
                }
                $conn = $conns[$id];
                if ($stream === $conn['server']) {
                    $forward($id, 'answer', $chunk);
                } elseif ($conn['draining']) {
                    continue;
                } elseif ($conn['server'] === null) {
                    $conns[$id]['head'] .= $chunk;
                    if (str_contains($conns[$id]['head'], "\r\n\r\n")) {
                        $begin($id);
                    }
                } else {
                    $toServer($id, $chunk);
                }
            }
        }
    }
}

if (PHP_SAPI === 'cli' && realpath((string) ($_SERVER['SCRIPT_FILENAME'] ?? '')) === __FILE__) {
    TestProxy::run($argv[1], $argv[2] ?? '');
}
