<?php

declare(strict_types=1);

// Unit tests of what the client computes by itself, then tests of what a user sees against the live server named by
// FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY (as for the README test): `php tests/UnitTest.php`. The conformance
// runner covers the rest. Plain PHP, so nothing needs installing.

require __DIR__ . '/../autoload.php';
require __DIR__ . '/test_proxy.php';

use FileStorage\Client;
use FileStorage\Exception\ConflictException;
use FileStorage\Exception\ConnectionException;
use FileStorage\Exception\ErrorFactory;
use FileStorage\Exception\FileTooLargeException;
use FileStorage\Exception\InternalServerException;
use FileStorage\Exception\InvalidRequestException;
use FileStorage\Exception\InvalidResponseException;
use FileStorage\Exception\NotFoundException;
use FileStorage\Exception\RateLimitException;
use FileStorage\Exception\ServiceUnavailableException;
use FileStorage\Http\HttpClient;
use FileStorage\Http\ResumableSink;
use FileStorage\Http\RetryAfter;
use FileStorage\Upload\MultipartBody;
use FileStorage\Upload\Tus;
use FileStorage\Upload\UploadSource;
use FileStorage\Webhook;

$failures = 0;
$count = 0;
function test(string $name, callable $body): void
{
    global $failures, $count;
    $count++;
    try {
        $body();
        echo "ok $name\n";
    } catch (Throwable $error) {
        $failures++;
        echo "FAILED $name: {$error->getMessage()} ({$error->getFile()}:{$error->getLine()})\n";
    }
}
function same(mixed $expected, mixed $actual, string $what = ''): void
{
    if ($expected !== $actual) {
        throw new RuntimeException("$what: expected " . var_export($expected, true) . ', got ' . var_export($actual, true));
    }
}

const BODY = '{"event":"file.uploaded","timestamp":"2026-11-24T10:00:00.000Z","webhook_id":"wh_1","data":{}}';
const SECRET = 'whsec_test';

test('the webhook signature of the exact body verifies, in any header spelling', function () {
    // Computed independently of PHP's hash_hmac, with the openssl command.
    $known = 'sha256=' . explode(' ', trim((string) shell_exec("printf '%s' '" . BODY . "' | openssl dgst -sha256 -hmac '" . SECRET . "' -r")))[0];
    same(true, Webhook::verify(BODY, ['X-Service-Signature' => $known], SECRET), 'canonical');
    same(true, Webhook::verify(BODY, ['x-service-signature' => [$known]], SECRET), 'PSR-7 style');
    same(true, Webhook::verify(BODY, ['HTTP_X_SERVICE_SIGNATURE' => $known], SECRET), '$_SERVER style');
    same(false, Webhook::verify(BODY . ' ', ['X-Service-Signature' => $known], SECRET), 'another body');
    same(false, Webhook::verify(BODY, ['X-Service-Signature' => $known], 'another'), 'another secret');
    same(false, Webhook::verify(BODY, ['X-Service-Signature' => substr($known, 7)], SECRET), 'no sha256= prefix');
    same(false, Webhook::verify(BODY, [], SECRET), 'no header');
});

test('an error envelope becomes a typed exception with its fields', function () {
    $body = '{"error":{"code":"file_too_large","message":"Too big","details":{"file_size":10,"max_size":5,"plan":"free"}}}';
    $error = ErrorFactory::fromResponse(413, ['x-request-id' => 'req-1'], $body);
    same(FileTooLargeException::class, $error::class);
    same(['file_too_large', 'Too big', 413, 'req-1', 10, 5, 'free'], [
        $error->getErrorCode(), $error->getMessage(), $error->getStatus(), $error->getRequestId(),
        $error->getFileSize(), $error->getMaxSize(), $error->getPlan(),
    ]);
});

test('an answer without an envelope gets the class of its status', function () {
    $error = ErrorFactory::fromResponse(502, [], '<html>Bad gateway</html>');
    same(InternalServerException::class, $error::class);
    same('HTTP 502', $error->getMessage());
    $limited = ErrorFactory::fromResponse(429, ['retry-after' => '7'], '');
    same(RateLimitException::class, $limited::class);
    same(7.0, $limited->getRetryAfter());
});

test('Retry-After in both of its forms', function () {
    same(12.0, RetryAfter::parse('12'));
    $inThirty = RetryAfter::parse(gmdate('D, d M Y H:i:s', time() + 30) . ' GMT');
    same(true, $inThirty >= 28 && $inThirty <= 31, "an HTTP date 30 s ahead gave $inThirty");
    same(null, RetryAfter::parse('soon'));
    same(null, RetryAfter::parse(null));
});

test('the multipart body streams the fields, then the file, with the announced length', function () {
    $path = tempnam(sys_get_temp_dir(), 'upload');
    file_put_contents($path, str_repeat('x', 200_000));
    $seen = [];
    $body = MultipartBody::build(UploadSource::open($path), 'a "b".txt', ['folder_id' => 'fld_1', 'name' => null], function (int $loaded) use (&$seen) {
        $seen[] = $loaded;
    });
    $reader = $body->open();
    $bytes = '';
    while (($chunk = $reader->read(65536)) !== '') {
        same(true, strlen($chunk) <= 65536, 'slice size');
        $bytes .= $chunk;
    }
    $reader->close();
    unlink($path);
    same($body->size, strlen($bytes), 'Content-Length');
    same(true, str_contains($bytes, "name=\"folder_id\"\r\n\r\nfld_1\r\n"), 'the folder field');
    same(false, str_contains($bytes, 'name="name"'), 'no empty field');
    same(true, str_contains($bytes, 'filename="a %22b%22.txt"'), 'the escaped file name');
    same(200_000, end($seen), 'progress');
    same(true, $body->replayable, 'a path can be sent again');
});

test("a stream that cannot seek is read once and never retried", function () {
    $process = proc_open(['printf', 'abc'], [1 => ['pipe', 'w']], $pipes);
    $stream = $pipes[1];
    $body = MultipartBody::build(UploadSource::open($stream), 'abc.txt', []);
    same(false, $body->replayable);
    $reader = $body->open();
    $bytes = '';
    while (($chunk = $reader->read(65536)) !== '') {
        $bytes .= $chunk;
    }
    same(true, str_contains($bytes, "\r\n\r\nabc\r\n"), 'read once');
    try {
        $body->open();
        throw new RuntimeException('a second read was allowed');
    } catch (LogicException) {
    }
    fclose($stream);
    proc_close($process);
});

test('a seekable stream is read again, from where it stood', function () {
    $stream = fopen('php://temp', 'w+');
    fwrite($stream, 'skip-abc');
    fseek($stream, 5);
    $source = UploadSource::open($stream);
    $body = MultipartBody::build($source, 'abc.txt', []);
    same([true, 3], [$body->replayable, $source->size], 'replayable, with the bytes after where it stood');
    foreach ([1, 2] as $time) {
        $reader = $body->open();
        $bytes = '';
        while (($chunk = $reader->read(65536)) !== '') {
            $bytes .= $chunk;
        }
        $reader->close();
        same([true, false], [str_contains($bytes, "\r\n\r\nabc\r\n"), str_contains($bytes, 'skip')], "read $time");
    }
    same('bc', $source->chunk(1, 3), 'a tus chunk');
});

test('tus metadata is base64 per key and leaves missing values out', function () {
    same('filename ' . base64_encode('résumé.pdf') . ',overwrite dHJ1ZQ==', Tus::encodeMetadata(['filename' => 'résumé.pdf', 'folder_id' => null, 'overwrite' => 'true']));
});

/** The Standard Webhooks signature computed with the openssl command, independently of this library. */
function opensslStandardSignature(string $hexKey, string $id, int $timestamp, string $body): string
{
    return 'v1,' . trim((string) shell_exec("printf '%s' '$id.$timestamp.$body' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$hexKey -binary | base64"));
}

test('a whsec_ secret signs Standard Webhooks with its decoded bytes', function () {
    $keyBytes = implode('', array_map('chr', range(1, 32)));
    $secret = 'whsec_' . base64_encode($keyBytes);
    $now = time();
    $headers = ['webhook-id' => 'evt_1', 'webhook-timestamp' => (string) $now, 'webhook-signature' => opensslStandardSignature(bin2hex($keyBytes), 'evt_1', $now, BODY)];
    same(true, Webhook::verifyStandard(BODY, $headers, $secret), 'genuine');
    same(false, Webhook::verifyStandard(BODY . ' ', $headers, $secret), 'another body');
    same(false, Webhook::verifyStandard(BODY, $headers, 'whsec_another'), 'another secret');
    $old = $now - 301;
    $stale = ['webhook-id' => 'evt_1', 'webhook-timestamp' => (string) $old, 'webhook-signature' => opensslStandardSignature(bin2hex($keyBytes), 'evt_1', $old, BODY)];
    same(false, Webhook::verifyStandard(BODY, $stale, $secret), 'five minutes old');
    same(true, Webhook::verifyStandard(BODY, $stale, $secret, tolerance: 600), 'within a wider tolerance');
});

test('another secret signs with its bytes, and any of several signatures or secrets will do', function () {
    $plain = 'conformance-webhook-secret-0123456789';
    $now = time();
    $signature = opensslStandardSignature(bin2hex($plain), 'evt_1', $now, BODY);
    $headers = ['Webhook-Id' => 'evt_1', 'Webhook-Timestamp' => (string) $now, 'Webhook-Signature' => 'v1,' . base64_encode(str_repeat('x', 32)) . " $signature"];
    same(true, Webhook::verifyStandard(BODY, $headers, $plain), 'the second of two signatures');
    same(true, Webhook::verifyStandard(BODY, $headers, ['whsec_' . base64_encode(str_repeat('k', 32)), $plain]), 'the second of two secrets');
});

test('an answer without an envelope to a locked upload (423) is a ConflictException', function () {
    $error = ErrorFactory::fromResponse(423, [], '');
    same([ConflictException::class, 'conflict', 423], [$error::class, $error->getErrorCode(), $error->getStatus()]);
});

test('a base URL that is not http(s) is refused when the client is made, not guessed to be http', function () {
    foreach (['127.0.0.1:8080', 'files.example.com', 'ftp://files.example.com'] as $baseUrl) {
        try {
            new Client('key', $baseUrl);
            throw new RuntimeException("$baseUrl was taken");
        } catch (InvalidArgumentException $error) {
            same(true, str_contains($error->getMessage(), 'https://files.example.com'), "the message for $baseUrl");
        }
    }
    same('HTTPS://files.example.com/storage', (new HttpClient('key', 'HTTPS://files.example.com/storage/'))->baseUrl, 'an https base URL');
});

test('an absolute URL is taken as it is, a path is put under the base URL and its path', function () {
    $http = new HttpClient('key', 'http://127.0.0.1:1/');
    same('https://files.example.com/v1/uploads/up_1', $http->url('https://files.example.com/v1/uploads/up_1'));
    same('http://127.0.0.1:1/v1/uploads/up_1', $http->url('/v1/uploads/up_1'));
    same('http://127.0.0.1:1/storage/v1/uploads/up_1', (new HttpClient('key', 'http://127.0.0.1:1/storage/'))->url('/v1/uploads/up_1'));
});

test('a download resumes with a Range after the bytes written, and only from a 206 of the same version', function () {
    $written = '';
    $sink = new ResumableSink(function (string $chunk) use (&$written) {
        $written .= $chunk;
    });
    same([], $sink->beginAttempt(), 'the first attempt');
    same(true, $sink->write(200, ['etag' => '"abc"'], '0123456789'), 'the first answer');
    same(null, $sink->whyNotResumable(), 'resumable');
    same(['Range' => 'bytes=10-', 'If-Range' => '"abc"'], $sink->beginAttempt(), 'the retry');
    same(false, $sink->write(200, ['etag' => '"def"'], 'new version'), 'the whole of another version');
    same(true, $sink->whyNotResumable() !== null, 'not resumable after another version');
    $sink->beginAttempt();
    same(false, $sink->write(206, ['content-range' => 'bytes 0-19/20'], '01234567890123456789'), 'a range from the start');
    $sink->beginAttempt();
    same(true, $sink->write(206, ['content-range' => 'bytes 10-19/20'], 'abcdefghij'), 'the rest');
    same('0123456789abcdefghij', $written, 'what the sink got');

    $weak = new ResumableSink(fn (string $chunk) => null);
    $weak->write(200, ['etag' => 'W/"abc"'], 'x');
    same(true, $weak->whyNotResumable() !== null, 'a weak ETag');
    $none = new ResumableSink(fn (string $chunk) => null);
    $none->write(200, [], 'x');
    same(true, $none->whyNotResumable() !== null, 'no ETag');
});

test('the API key shows neither in print_r or var_dump of the client nor in the trace of an exception', function () {
    $key = 'fss_this-key-must-not-reach-a-log';
    $client = new Client($key, 'https://files.example.com');
    same(false, str_contains(print_r($client, true), $key), 'print_r');
    ob_start();
    var_dump($client->files);
    same(false, str_contains((string) ob_get_clean(), $key), 'var_dump');
    // As php.ini-development sets them: a trace shows each call's arguments, error trackers and logs keep it.
    $previous = [ini_set('zend.exception_ignore_args', '0'), ini_set('zend.exception_string_param_max_len', '1000000')];
    try {
        new Client($key, 'ftp://files.example.com');
        throw new RuntimeException('an ftp:// base URL was taken');
    } catch (InvalidArgumentException $e) {
        same(false, str_contains($e->getTraceAsString(), $key), "the trace: {$e->getTraceAsString()}");
    } finally {
        ini_set('zend.exception_ignore_args', (string) $previous[0]);
        ini_set('zend.exception_string_param_max_len', (string) $previous[1]);
    }
});

// Against the live server.

function live(int $maxRetries = 2, ?string $baseUrl = null, int $resumableChunk = 8 * Client::MIB): Client
{
    $key = getenv('FILE_STORAGE_API_KEY');
    $base = $baseUrl ?? getenv('FILE_STORAGE_BASE_URL');
    if ($key === false || $base === false) {
        throw new RuntimeException('FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY name the server these tests run against');
    }
    return new Client($key, $base, maxRetries: $maxRetries, resumableChunk: $resumableChunk);
}

/** The bytes a download hands its sink, as one string: `collected(fn (callable $sink) => $files->download($id, $sink))`. */
function collected(callable $download): string
{
    $bytes = '';
    $download(function (string $chunk) use (&$bytes) {
        $bytes .= $chunk;
    });
    return $bytes;
}

/** A file of random bytes: [path, md5]. */
function randomFile(int $size): array
{
    $path = tempnam(sys_get_temp_dir(), 'fss-php-');
    file_put_contents($path, random_bytes($size));
    return [$path, md5_file($path)];
}

/** A raw HTTP/1.1 request to the live server, closing its connection when answered. */
function rawRequest(string $method, string $path, array $headers, string $body): string
{
    $server = parse_url((string) getenv('FILE_STORAGE_BASE_URL'));
    $head = "$method $path HTTP/1.1\r\nHost: {$server['host']}:{$server['port']}\r\nAuthorization: Bearer " . getenv('FILE_STORAGE_API_KEY') . "\r\n";
    foreach ($headers + ['Content-Length' => (string) strlen($body), 'Connection' => 'close'] as $name => $value) {
        $head .= "$name: $value\r\n";
    }
    return "$head\r\n$body";
}

/**
 * Sends $request to the live server through a test proxy that passes all but its last $withheld bytes, holds those
 * $seconds, then sends them ('finish') or drops the connection ('drop'), as a slow or a dead client would. Answers
 * once the first part has reached the server; the returned function waits for the end and answers what came back
 * (the answer, for 'finish').
 *
 * @return callable(): string
 */
function holdRequest(string $request, int $withheld, float $seconds, string $then): callable
{
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))->stall(strlen($request) - $withheld, $seconds, $then);
    $socket = stream_socket_client("tcp://127.0.0.1:{$proxy->port}");
    fwrite($socket, $request);
    // Let the server read the head and begin the request before anything else arrives.
    usleep(500_000);
    return static function () use ($proxy, $socket): string {
        stream_set_timeout($socket, 30);
        $answer = (string) stream_get_contents($socket);
        fclose($socket);
        $proxy->close();
        return $answer;
    };
}

test('an upload retried while its first attempt still runs on the server waits for it and gets its file (409 idempotency_key_in_use)', function () {
    $client = live(maxRetries: 5);
    $folder = $client->folders->create('held key ' . bin2hex(random_bytes(4)));
    [$path, $md5] = randomFile(100_000);
    $key = 'held-' . bin2hex(random_bytes(8));
    // The same upload as the client's below (same length, same key), whose last bytes arrive 2 s late.
    $body = MultipartBody::build(UploadSource::open($path), basename($path), ['folder_id' => $folder['id'], 'name' => null, 'overwrite' => null]);
    $reader = $body->open();
    for ($bytes = ''; ($chunk = $reader->read(65536)) !== '';) {
        $bytes .= $chunk;
    }
    $finished = holdRequest(rawRequest('POST', '/v1/files/upload', ['Idempotency-Key' => $key, 'Content-Type' => (string) $body->contentType], $bytes), 1000, 2, 'finish');

    $file = $client->files->upload($path, ['folderId' => $folder['id'], 'idempotencyKey' => $key]);
    $answer = $finished();
    $first = json_decode(substr($answer, strpos($answer, "\r\n\r\n") + 4), true);
    unlink($path);
    same($first['data']['id'], $file['id'], 'the file of the first request');
    same($md5, $file['md5_hash'], 'its MD5');
    same([$file['id']], array_map(fn ($f) => $f['id'], iterator_to_array($client->files->iterate(['folder_id' => $folder['id']]), false)), 'the files of the folder');
});

test('a plain 409 conflict is thrown at once, not retried', function () {
    $client = live(maxRetries: 2);
    [$path] = randomFile(1000);
    $location = $client->files->startResumableUpload($path);
    // Through a proxy that counts the PATCHes: the client's own retries would pass it too.
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'));
    try {
        $http = new HttpClient((string) getenv('FILE_STORAGE_API_KEY'), $proxy->url, maxRetries: 2);
        try {
            // Not the upload's offset (0): 409 conflict.
            $http->send('PATCH', $proxy->url . parse_url($location, PHP_URL_PATH), ['headers' => ['Tus-Resumable' => Tus::VERSION, 'Upload-Offset' => '5', 'Content-Type' => 'application/offset+octet-stream']]);
            throw new RuntimeException('a PATCH at the wrong offset was accepted');
        } catch (ConflictException $e) {
            same(['conflict', 409], [$e->getErrorCode(), $e->getStatus()]);
        }
        same(1, $proxy->count('#^PATCH #'), 'PATCHes sent');
    } finally {
        $proxy->close();
    }
    unlink($path);
});

test('iterator_to_array over a listing of one item per page keeps every item', function () {
    $client = live();
    $folder = $client->folders->create('pages ' . bin2hex(random_bytes(4)));
    $ids = [];
    foreach (['a.txt', 'b.txt', 'c.txt'] as $name) {
        $stream = fopen('php://memory', 'w+');
        fwrite($stream, $name);
        rewind($stream);
        $ids[] = $client->files->upload($stream, ['name' => $name, 'folderId' => $folder['id']])['id'];
    }
    $items = iterator_to_array($client->files->iterate(['folder_id' => $folder['id'], 'per_page' => 1, 'sort' => 'name_asc']));
    same($ids, array_map(fn ($file) => $file['id'], array_values($items)), 'the files');
    same([0, 1, 2], array_keys($items), 'the keys');
    $subfolders = [];
    foreach (['x', 'y'] as $name) {
        $subfolders[] = $client->folders->create($name, $folder['id'])['id'];
    }
    $listed = iterator_to_array($client->folders->iterate(['parent_id' => $folder['id'], 'per_page' => 1, 'sort' => 'name_asc']));
    same($subfolders, array_map(fn ($f) => $f['id'], array_values($listed)), 'the folders');
    same($folder['id'], $client->folders->get($subfolders[0])['parent_id'], 'the parent of a subfolder');
});

test('iterate reads the feed in batches of $limit events, as the other libraries can', function () {
    $client = live();
    $feed = $client->events->iterate(stopWhenIdle: true);
    foreach ($feed as $_) {
    }
    $after = $feed->getReturn();
    $names = [];
    for ($i = 0; $i < 3; $i++) {
        $names[] = $client->folders->create("batch $i " . bin2hex(random_bytes(4)))['name'];
    }
    // The feed shows an event once it is stamped, a moment after its request.
    $deadline = microtime(true) + 20;
    while (count(iterator_to_array($client->events->iterate(after: $after, types: ['folder.created'], stopWhenIdle: true), false)) < 3 && microtime(true) < $deadline) {
        usleep(200_000);
    }
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'));
    try {
        $events = live(baseUrl: $proxy->url)->events->iterate(after: $after, types: ['folder.created'], stopWhenIdle: true, limit: 1);
        same($names, array_map(fn ($event) => $event['data']['folder']['name'], iterator_to_array($events, false)), 'the events');
        same(4, $proxy->count('#^GET /v1/events\?\S*limit=1\b#'), 'one event per batch, then an empty one');
    } finally {
        $proxy->close();
    }
});

test('a tail left at an event resumes after it, without repeating it', function () {
    $client = live();
    $end = $client->events->iterate(stopWhenIdle: true);
    foreach ($end as $event) {
    }
    $folder = $client->folders->create('left at ' . bin2hex(random_bytes(4)));
    $tail = $client->events->tail(after: $end->getReturn(), types: ['folder.created'], wait: 20);
    // A tail never ends by itself: a program stops at an event, keeps $tail->cursor(), and resumes from it later.
    foreach ($tail as $event) {
        if ($event['data']['folder']['id'] === $folder['id']) {
            break;
        }
    }
    $resumed = array_map(fn ($event) => $event['data']['folder']['id'], iterator_to_array($client->events->iterate(after: $tail->cursor(), types: ['folder.created'], stopWhenIdle: true), false));
    same(false, in_array($folder['id'], $resumed, true), 'the event stopped at, resumed again');
});

test('iterator_to_array over the event feed keeps the events of every batch', function () {
    $client = live();
    $feed = $client->events->iterate(stopWhenIdle: true);
    foreach ($feed as $_) {
    }
    $after = $feed->getReturn();
    $parent = $client->folders->create('events ' . bin2hex(random_bytes(4)));
    $created = [$parent['id']];
    // One more than a batch (100 events).
    for ($i = 0; $i < 100; $i++) {
        $created[] = $client->folders->create("f$i", $parent['id'])['id'];
    }
    // The feed shows an event once it is stamped, a moment after its request.
    $deadline = microtime(true) + 20;
    while (true) {
        $events = iterator_to_array($client->events->iterate(after: $after, types: ['folder.created'], stopWhenIdle: true));
        $seen = array_map(fn ($event) => $event['data']['folder']['id'], array_values($events));
        if (array_diff($created, $seen) === [] || microtime(true) > $deadline) {
            break;
        }
        usleep(200_000);
    }
    same([], array_values(array_diff($created, $seen)), 'the created folders missing from the feed');
    same($created, array_values(array_intersect($seen, $created)), 'the created folders, in order');
});

test('resumeUpload takes an absolute upload URL as it is', function () {
    $client = live();
    [$path, $md5] = randomFile(300_000);
    $location = $client->files->startResumableUpload($path);
    $absolute = preg_match('#^https?://#', $location) === 1 ? $location : rtrim((string) getenv('FILE_STORAGE_BASE_URL'), '/') . $location;
    $file = $client->files->resumeUpload($absolute, $path);
    unlink($path);
    same([300_000, $md5], [$file['size'], $file['md5_hash']], 'the stored file');
});

test('resumeUpload with a file of another size throws InvalidArgumentException before sending a byte', function () {
    $client = live();
    [$path, $md5] = randomFile(300_000);
    $location = $client->files->startResumableUpload($path);
    // A guard against a hang only (it looped on empty PATCHes): the answer comes from one HEAD.
    pcntl_async_signals(true);
    pcntl_signal(SIGALRM, static fn () => throw new RuntimeException('resumeUpload did not return within 120 s'));
    pcntl_alarm(120);
    try {
        foreach ([100_000, 500_000] as $size) {
            [$other] = randomFile($size);
            try {
                $client->files->resumeUpload($location, $other);
                throw new RuntimeException("a $size-byte file resumed a 300000-byte upload");
            } catch (InvalidArgumentException $e) {
                same(1, preg_match("/300000 bytes.*$size/", $e->getMessage()), "the message: {$e->getMessage()}");
            } finally {
                unlink($other);
            }
        }
    } finally {
        pcntl_alarm(0);
    }
    same($md5, $client->files->resumeUpload($location, $path)['md5_hash'], 'resumed with its own file, nothing else in it');
    unlink($path);
});

test('an upload sent again with its idempotencyKey (a restarted process) stores the file once, in one request or resumable', function () {
    $client = live();
    [$path] = randomFile(300_000);
    try {
        foreach ([PHP_INT_MAX, 1] as $threshold) {
            $folder = $client->folders->create('idempotent upload ' . bin2hex(random_bytes(4)));
            $options = ['name' => 'once.bin', 'folderId' => $folder['id'], 'idempotencyKey' => bin2hex(random_bytes(16)), 'resumableThreshold' => $threshold];
            $first = $client->files->upload($path, $options);
            $again = $client->files->upload($path, $options);
            same($first['id'], $again['id'], "the file uploaded again, resumableThreshold $threshold");
            same(['once.bin'], array_map(fn ($file) => $file['name'], $client->files->list(['folder_id' => $folder['id']])->data), 'the files of the folder');
        }
    } finally {
        unlink($path);
    }
});

test('an update with no changes answers the folder or file as it is, as in the other libraries', function () {
    $client = live();
    $folder = $client->folders->create('unchanged ' . bin2hex(random_bytes(4)));
    same($folder['name'], $client->folders->update($folder['id'], [])['name'], 'the folder');
    $file = $client->files->upload(fopen('data://text/plain,same', 'r'), ['name' => 'same.txt', 'folderId' => $folder['id']]);
    same($file['name'], $client->files->update($file['id'], [])['name'], 'the file');
});

test('an aborted resumable upload gives its reserved quota back and cannot be resumed', function () {
    $client = live();
    [$path] = randomFile(3 * Client::MIB);
    $available = fn () => $client->user->info()['storage']['available'];
    $before = $available();
    $location = $client->files->startResumableUpload($path);
    same($before - 3 * Client::MIB, $available(), 'storage available while the upload is open');
    $client->files->abortUpload($location);
    same($before, $available(), 'storage available once it is aborted');
    try {
        $client->files->resumeUpload($location, $path);
        throw new RuntimeException('resuming an aborted upload went through');
    } catch (NotFoundException) {
    } finally {
        unlink($path);
    }
});

test('a resumable upload locked by an earlier PATCH that went silent waits for the lock and completes (423), even with maxRetries 0', function () {
    // Waiting for a lock is no retry: another request on the upload still runs.
    $client = live(maxRetries: 0, resumableChunk: 256 * 1024);
    [$path, $md5] = randomFile(1_000_000);
    $location = $client->files->startResumableUpload($path);
    // A PATCH whose client stops sending after 64 KiB holds the upload's lock; it drops its connection after 8 s.
    $patch = rawRequest('PATCH', $location, ['Tus-Resumable' => Tus::VERSION, 'Upload-Offset' => '0', 'Content-Type' => 'application/offset+octet-stream'], (string) file_get_contents($path));
    $dropped = holdRequest($patch, 1_000_000 - 65536, 8, 'drop');
    $started = microtime(true);
    $file = $client->files->resumeUpload($location, $path);
    $waited = microtime(true) - $started;
    $dropped();
    unlink($path);
    same([1_000_000, $md5], [$file['size'], $file['md5_hash']], 'the stored file');
    same(true, $waited >= 6, "resumed after $waited s, before the silent PATCH ended");
});

test('a download cut off in its body is resumed where it broke off, to a path, a stream or a callable', function () {
    $client = live();
    [$path, $md5] = randomFile(3 * Client::MIB);
    $file = $client->files->upload($path);
    unlink($path);
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'));
    try {
        $throughProxy = live(baseUrl: $proxy->url);
        $cutAfter = fn (int $bytes) => $proxy->cut('answer', $bytes, '#/download\?#');
        $target = tempnam(sys_get_temp_dir(), 'fss-php-download-');
        $cutAfter(Client::MIB);
        $throughProxy->files->download($file['id'], $target);
        same([3 * Client::MIB, $md5], [filesize($target), md5_file($target)], 'the file downloaded to a path');
        unlink($target);

        $stream = fopen('php://temp', 'w+');
        $cutAfter(2 * Client::MIB);
        $throughProxy->files->download($file['id'], $stream);
        rewind($stream);
        same($md5, md5(stream_get_contents($stream)), 'the file downloaded to a stream');

        $hash = hash_init('md5');
        $cutAfter(100_000);
        $throughProxy->files->download($file['id'], function (string $chunk) use ($hash) {
            hash_update($hash, $chunk);
        });
        same($md5, hash_final($hash), 'the file given to a callable');
        same(3, $proxy->cuts(), 'the cuts');
    } finally {
        $proxy->close();
    }
});

/** A small real PNG of one colour, made with PHP's own zlib. */
function pngImage(int $width = 64, int $height = 48): string
{
    $pixels = str_repeat("\x00" . str_repeat(pack('C3', 200, 40, 90), $width), $height);
    $chunk = fn (string $kind, string $data) => pack('N', strlen($data)) . $kind . $data . pack('N', crc32($kind . $data));
    return "\x89PNG\r\n\x1a\n" . $chunk('IHDR', pack('NNC5', $width, $height, 8, 2, 0, 0, 0))
        . $chunk('IDAT', (string) gzcompress($pixels)) . $chunk('IEND', '');
}

test("an image's thumbnail is downloaded once made; a file without one throws NotFoundException", function () {
    $client = live();
    $image = tempnam(sys_get_temp_dir(), 'fss-php-image-');
    file_put_contents($image, pngImage());
    $photo = $client->files->upload($image, ['name' => 'photo.png']);
    $text = $client->files->upload(fopen('data://text/plain,no%20pixels%20here', 'r'), ['name' => 'notes.txt']);
    unlink($image);
    $deadline = microtime(true) + 20;
    while (!isset($client->files->get($photo['id'])['thumbnail_url']) && microtime(true) < $deadline) {
        usleep(200_000);
    }
    $target = tempnam(sys_get_temp_dir(), 'fss-php-thumbnail-');
    $client->files->thumbnail($photo['id'], $target);
    $thumbnail = (string) file_get_contents($target);
    unlink($target);
    same(['RIFF', 'WEBP'], [substr($thumbnail, 0, 4), substr($thumbnail, 8, 4)], 'the thumbnail\'s format');
    $chunks = '';
    $client->files->thumbnail($photo['id'], function (string $chunk) use (&$chunks) {
        $chunks .= $chunk;
    });
    same($thumbnail, $chunks, 'the thumbnail given to a callable');
    try {
        $client->files->thumbnail($text['id'], fn (string $chunk) => null);
        throw new RuntimeException('a file without a thumbnail did not throw');
    } catch (NotFoundException $e) {
        same([404, true], [$e->getStatus(), str_contains($e->getMessage(), 'no thumbnail')], 'the exception');
    }
});

test('a share link is read back by its id with its status, revoked too; an unknown id throws NotFoundException', function () {
    $client = live();
    $file = $client->files->upload(fopen('data://text/plain,shared%20by%20id', 'r'), ['name' => 'by-id.txt']);
    $share = $client->shares->create(['file_id' => $file['id'], 'password' => 'open sesame']);
    $fetched = $client->shares->get($share['id']);
    same([$share['id'], $share['url'], $file['id'], true, true, null], [$fetched['id'], $fetched['url'], $fetched['file_id'], $fetched['password_protected'], $fetched['active'], $fetched['revoked_at']], 'the share link');
    same($client->shares->list(['file_id' => $file['id']])->data[0], $fetched, 'the share link as the listing shows it');
    $revoked = $client->shares->revoke($share['id']);
    $again = $client->shares->get($share['id']);
    same([$share['id'], false, $revoked['revoked_at']], [$again['id'], $again['active'], $again['revoked_at']], 'the revoked share link');
    try {
        $client->shares->get('shr_00000000000000000000000000000000');
        throw new RuntimeException('an unknown share id did not throw');
    } catch (NotFoundException $e) {
        same([404, 'not_found'], [$e->getStatus(), $e->getErrorCode()], 'the exception');
    }
});

test('a download that fails names its request without the signature of its link', function () {
    $client = live();
    [$path] = randomFile(1_000_000);
    $file = $client->files->upload($path);
    unlink($path);
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))->cut('answer', 200_000, '#/download\?#');
    try {
        live(maxRetries: 0, baseUrl: $proxy->url)->files->download($file['id'], fn (string $chunk) => null);
        throw new RuntimeException('the cut download did not fail');
    } catch (ConnectionException $e) {
        // The signature opens the file for an hour, and error messages end up in logs.
        same(1, preg_match("#^GET /v1/files/{$file['id']}/download\\?<redacted> #", $e->getMessage()), "the message: {$e->getMessage()}");
        same(false, str_contains($e->getMessage(), 'signature='), 'the signature in the message');
    } finally {
        $proxy->close();
    }
});

test('a range downloads those bytes of a file or a shared file; past the end is InvalidRequestException (416)', function () {
    $client = live();
    $content = fopen('php://temp', 'w+');
    fwrite($content, '0123456789');
    rewind($content);
    $file = $client->files->upload($content, ['name' => 'digits.txt']);
    $share = $client->shares->create(['file_id' => $file['id'], 'password' => 'open sesame']);
    // Bytes $start to $end inclusive, as HTTP counts them; no end: to the end; a negative start: the last bytes.
    foreach ([[2, 5, '2345'], [7, null, '789'], [-3, null, '789']] as [$start, $end, $expected]) {
        $got = collected(fn (callable $sink) => $client->files->download($file['id'], $sink, start: $start, end: $end));
        same($expected, $got, "bytes $start to $end");
        $shared = collected(fn (callable $sink) => $client->shares->download($share['url'], $sink, 'open sesame', start: $start, end: $end));
        same($expected, $shared, "shared bytes $start to $end");
    }
    $path = tempnam(sys_get_temp_dir(), 'fss-php-range-');
    $client->files->download($file['id'], $path, start: 4, end: 6);
    same('456', file_get_contents($path), 'the bytes written to a path');
    unlink($path);
    try {
        $client->files->download($file['id'], fn (string $chunk) => null, start: 20);
        throw new RuntimeException('a range past the end did not throw');
    } catch (InvalidRequestException $e) {
        same([416, ['size' => 10]], [$e->getStatus(), $e->getDetails()], 'past the end');
    }
    foreach ([[null, 5], [-3, 9], [2, -1]] as [$start, $end]) {
        try {
            $client->files->download($file['id'], fn (string $chunk) => null, start: $start, end: $end);
            throw new RuntimeException("start $start, end $end did not throw");
        } catch (InvalidArgumentException) {
        }
    }
});

test('a range cut mid-body is resumed from the byte it stopped at, within the range', function () {
    $client = live();
    [$path] = randomFile(3 * Client::MIB);
    $file = $client->files->upload($path);
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))->cut('answer', 300_000, '#/download\?#');
    try {
        $got = collected(fn (callable $sink) => live(baseUrl: $proxy->url)->files->download($file['id'], $sink, start: Client::MIB, end: 2 * Client::MIB - 1));
        same(1, $proxy->cuts(), 'cuts');
        same(md5((string) file_get_contents($path, false, null, Client::MIB, Client::MIB)), md5($got), 'the bytes of the range, each once');
    } finally {
        $proxy->close();
        unlink($path);
    }
});

// A proxy or cache that does not do ranges answers 200 with the whole file: a download resumed from an offset (an
// append to the bytes already on disk) must still get only the bytes after it.
test('a range through a proxy that ignores Range still gives only those bytes', function () {
    $client = live();
    $content = fopen('php://temp', 'w+');
    fwrite($content, '0123456789');
    rewind($content);
    $file = $client->files->upload($content, ['name' => 'digits.txt']);
    $share = $client->shares->create(['file_id' => $file['id'], 'password' => 'open sesame']);
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))->ignoreRanges('#/download#');
    try {
        $through = live(baseUrl: $proxy->url);
        foreach ([[2, 5, '2345'], [7, null, '789'], [-3, null, '789'], [4, 50, '456789']] as [$start, $end, $expected]) {
            $got = collected(fn (callable $sink) => $through->files->download($file['id'], $sink, start: $start, end: $end));
            same($expected, $got, "bytes $start to $end");
            $shared = collected(fn (callable $sink) => $through->shares->download($share['url'], $sink, 'open sesame', start: $start, end: $end));
            same($expected, $shared, "shared bytes $start to $end");
        }
        $path = tempnam(sys_get_temp_dir(), 'fss-php-resume-');
        file_put_contents($path, '0123');
        $append = fopen($path, 'ab');
        $through->files->download($file['id'], $append, start: (int) filesize($path));
        fclose($append);
        same('0123456789', file_get_contents($path), 'a download resumed by appending');
        unlink($path);
        same(true, $proxy->count('#/download#') >= 9, 'the downloads went through the proxy');
    } finally {
        $proxy->close();
    }
});

test('a download cut mid-body and continued through a proxy that ignores Range gives each byte once', function () {
    $client = live();
    [$path] = randomFile(3 * Client::MIB);
    $file = $client->files->upload($path);
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))->ignoreRanges('#/download\?#')->cut('answer', 300_000, '#/download\?#');
    try {
        $whole = collected(fn (callable $sink) => live(baseUrl: $proxy->url)->files->download($file['id'], $sink));
        same(md5_file($path), md5($whole), 'the whole file, each byte once');
        $proxy->cut('answer', 300_000, '#/download\?#');
        $part = collected(fn (callable $sink) => live(baseUrl: $proxy->url)->files->download($file['id'], $sink, start: Client::MIB, end: 2 * Client::MIB - 1));
        same(2, $proxy->cuts(), 'cuts');
        same(md5((string) file_get_contents($path, false, null, Client::MIB, Client::MIB)), md5($part), 'the bytes of the range, each once');
    } finally {
        $proxy->close();
        unlink($path);
    }
});

test('an upload from a seekable stream cut mid-request is sent again and stored once', function () {
    $client = live();
    $folder = $client->folders->create('seekable ' . bin2hex(random_bytes(4)));
    $bytes = random_bytes(300 * 1024);
    $stream = fopen('php://temp', 'w+');
    fwrite($stream, $bytes);
    rewind($stream);
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))->cut('request', 100 * 1024, '#^POST /v1/files/upload#');
    try {
        $file = live(baseUrl: $proxy->url)->files->upload($stream, ['name' => 'io.bin', 'folderId' => $folder['id']]);
        same([1, strlen($bytes), md5($bytes)], [$proxy->cuts(), $file['size'], $file['md5_hash']], 'the stored file');
        same(['io.bin'], array_map(fn ($one) => $one['name'], $client->files->list(['folder_id' => $folder['id']])->data), 'stored once');
    } finally {
        $proxy->close();
    }
});

test('a large seekable stream goes through the resumable endpoint from where it stood and resumes after a cut', function () {
    $client = live();
    $folder = $client->folders->create('seekable tus ' . bin2hex(random_bytes(4)));
    $bytes = random_bytes(3 * Client::MIB);
    $stream = fopen('php://temp', 'w+');
    fwrite($stream, "skipped$bytes");
    fseek($stream, 7);
    // The first PATCH (a chunk and its head) passes, the second is cut mid-way.
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))->cut('request', Client::MIB + intdiv(Client::MIB, 2), '#^PATCH #');
    try {
        $through = live(baseUrl: $proxy->url, resumableChunk: Client::MIB);
        $file = $through->files->upload($stream, ['name' => 'big-io.bin', 'folderId' => $folder['id'], 'resumableThreshold' => Client::MIB]);
        same([1, strlen($bytes), md5($bytes)], [$proxy->cuts(), $file['size'], $file['md5_hash']], 'the stored file');
        same(true, $proxy->count('#^PATCH #') > 3, 'three chunks, one of them sent again');
    } finally {
        $proxy->close();
    }
});

test('an answer that is not JSON (a captive portal, a proxy page) throws InvalidResponseException quoting it', function () {
    $page = "<html><head><title>Hotel Wi-Fi</title></head>\n<body>Accept the terms to go on.</body></html>";
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))
        ->answer('#^GET /v1/user/info #', TestProxy::httpAnswer('200 OK', ['Content-Type' => 'text/html'], $page));
    try {
        live(baseUrl: $proxy->url)->user->info();
        throw new RuntimeException('an HTML page was taken for an answer');
    } catch (InvalidResponseException $e) {
        same(['invalid_response', 200], [$e->getErrorCode(), $e->getStatus()]);
        foreach (['GET /v1/user/info', 'text/html', '<html><head><title>Hotel Wi-Fi</title></head> <body>Accept'] as $quoted) {
            same(true, str_contains($e->getMessage(), $quoted), "'$quoted' in the message: {$e->getMessage()}");
        }
    } finally {
        $proxy->close();
    }
});

test('a Retry-After longer than the client waits is thrown at once, with it (429 and 503)', function () {
    foreach ([['429 Too Many Requests', RateLimitException::class, 'rate_limit_exceeded'], ['503 Service Unavailable', ServiceUnavailableException::class, 'service_unavailable']] as [$status, $class, $code]) {
        $envelope = json_encode(['success' => false, 'error' => ['code' => $code, 'message' => 'Come back in an hour.']]);
        $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'))
            ->answer('#^GET /v1/user/info #', TestProxy::httpAnswer($status, ['Content-Type' => 'application/json', 'Retry-After' => 3600], $envelope));
        $started = microtime(true);
        try {
            live(maxRetries: 2, baseUrl: $proxy->url)->user->info();
            throw new RuntimeException("$status was taken for an answer");
        } catch (FileStorage\Exception\FileStorageException $e) {
            same([$class, 3600.0, 1], [$e::class, $e->getRetryAfter(), $proxy->count()], $status);
            // Waiting would take the hour asked for; one request (above) shows it was not retried.
            same(true, microtime(true) - $started < 60, "$status waited before throwing");
        } finally {
            $proxy->close();
        }
    }
});

/**
 * The repository's server (dist/main.js, built with `npm run build`) as its own process on $port, with $environment
 * added to this one's, once /health answers; and an owner key of a new account, made with dist/cli.js.
 *
 * @param array<string, string> $environment
 * @return array{0: resource, 1: string} the process and the key
 */
function startServer(int $port, array $environment): array
{
    $dist = dirname(__DIR__, 3) . '/dist';
    if (!is_file("$dist/main.js")) {
        throw new RuntimeException("$dist/main.js is missing: run `npm run build` at the repository root first");
    }
    $environment += getenv();
    $log = "{$environment['STORAGE_DIR']}.log";
    $server = proc_open(['node', "$dist/main.js"], [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'w'], 2 => ['redirect', 1]], $pipes, null, $environment);
    for ($deadline = microtime(true) + 60; @file_get_contents("http://127.0.0.1:$port/health") === false; usleep(200_000)) {
        if (!proc_get_status($server)['running'] || microtime(true) > $deadline) {
            proc_terminate($server, 9);
            proc_close($server);
            throw new RuntimeException("dist/main.js did not answer /health:\n" . file_get_contents($log));
        }
    }
    $cli = proc_open(['node', "$dist/cli.js", 'accounts', 'create', '--name', 'Prefixed', '--plan', 'pro'], [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $environment);
    $output = (string) stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
    proc_close($cli);
    $account = json_decode($output, true);
    if (!is_array($account) || !isset($account['api_key'])) {
        proc_terminate($server);
        proc_close($server);
        throw new RuntimeException("dist/cli.js accounts create: $output");
    }
    return [$server, $account['api_key']];
}

// A server mounted under a path by a reverse proxy: its PUBLIC_BASE_URL names the proxy's prefix, as such a
// deployment sets it, so the links it answers carry the prefix too. Redis is TEST_REDIS_URL's or REDIS_URL's, as for
// the server's own tests.
test('a server mounted under a path is reached on every route through a base URL with that path', function () {
    $probe = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) explode(':', (string) stream_socket_get_name($probe, false))[1];
    fclose($probe);
    $proxy = TestProxy::start("http://127.0.0.1:$port", '/storage');
    $dir = sys_get_temp_dir() . '/fss-php-prefixed-' . bin2hex(random_bytes(4));
    mkdir($dir);
    $server = null;
    try {
        [$server, $key] = startServer($port, [
            'NODE_ENV' => 'test', 'PORT' => (string) $port, 'PUBLIC_BASE_URL' => $proxy->url, 'LOG_LEVEL' => 'silent',
            'DATABASE_URL' => "sqlite:$dir/storage.sqlite", 'STORAGE_DIR' => "$dir/blobs",
            'REDIS_URL' => getenv('TEST_REDIS_URL') ?: (getenv('REDIS_URL') ?: 'redis://127.0.0.1:6379'),
            'REDIS_KEY_PREFIX' => 'fss-php-prefixed-' . bin2hex(random_bytes(6)),
            'URL_SIGNING_SECRET' => bin2hex(random_bytes(32)), 'SECRETS_ENCRYPTION_KEY' => bin2hex(random_bytes(32)),
        ]);
        $client = new Client($key, "{$proxy->url}/", resumableThreshold: 1, resumableChunk: 64 * 1024);
        [$path, $md5] = randomFile(200_000);
        $folder = $client->folders->create('Under a prefix');
        // Resumable: the tus Location is relative (/v1/uploads/{id}), taken under the base URL.
        $file = $client->files->upload($path, ['folderId' => $folder['id'], 'name' => 'prefixed.bin']);
        same([200_000, $md5], [$file['size'], $file['md5_hash']], 'the uploaded file');
        same(true, str_starts_with($file['download_url'], "{$proxy->url}/v1/files/"), "the server's link under the prefix: {$file['download_url']}");

        $copy = "$dir/copy.bin";
        $client->files->download($file['id'], $copy);
        same($md5, md5_file($copy), 'the downloaded file');
        $shared = fopen('php://temp', 'w+');
        $client->shares->download($client->shares->create(['file_id' => $file['id']])['url'], $shared);
        rewind($shared);
        same($md5, md5((string) stream_get_contents($shared)), 'the shared file');
        // An absolute upload URL is used as it is.
        $location = $client->files->startResumableUpload($path, ['name' => 'absolute.bin', 'folderId' => $folder['id']]);
        same($md5, $client->files->resumeUpload($proxy->url . $location, $path)['md5_hash'], 'the file uploaded to an absolute URL');
        unlink($path);
        $names = array_map(fn ($f) => $f['name'], iterator_to_array($client->files->iterate(['folder_id' => $folder['id'], 'sort' => 'name_asc']), false));
        same(['absolute.bin', 'prefixed.bin'], $names, 'the files of the folder');
        same($proxy->count(), $proxy->count('#^\S+ /storage/#'), 'requests under the prefix');
    } finally {
        if ($server !== null) {
            proc_terminate($server);
            proc_close($server);
        }
        $proxy->close();
        exec('rm -rf ' . escapeshellarg($dir));
    }
});

/** Each call that takes an id, with the id put where it goes. @return array<string, callable(Client, string): mixed> */
function callsTakingAnId(): array
{
    return [
        'files->get' => fn (Client $client, string $id) => $client->files->get($id),
        'files->update' => fn (Client $client, string $id) => $client->files->update($id, ['name' => 'renamed.txt']),
        'files->delete' => fn (Client $client, string $id) => $client->files->delete($id),
        'files->restore' => fn (Client $client, string $id) => $client->files->restore($id),
        'files->download' => fn (Client $client, string $id) => $client->files->download($id, fn (string $chunk) => null),
        'files->thumbnail' => fn (Client $client, string $id) => $client->files->thumbnail($id, fn (string $chunk) => null),
        'folders->get' => fn (Client $client, string $id) => $client->folders->get($id),
        'folders->update' => fn (Client $client, string $id) => $client->folders->update($id, ['name' => 'Renamed']),
        'folders->delete' => fn (Client $client, string $id) => $client->folders->delete($id),
        'shares->get' => fn (Client $client, string $id) => $client->shares->get($id),
        'shares->revoke' => fn (Client $client, string $id) => $client->shares->revoke($id),
        'webhooks->get' => fn (Client $client, string $id) => $client->webhooks->get($id),
        'webhooks->update' => fn (Client $client, string $id) => $client->webhooks->update($id, ['active' => false]),
        'webhooks->delete' => fn (Client $client, string $id) => $client->webhooks->delete($id),
        'webhooks->test' => fn (Client $client, string $id) => $client->webhooks->test($id),
        'webhooks->rotateSecret' => fn (Client $client, string $id) => $client->webhooks->rotateSecret($id),
        'webhooks->replay' => fn (Client $client, string $id) => $client->webhooks->replay($id, '2026-01-01T00:00:00.000Z'),
        'webhooks->deliveries' => fn (Client $client, string $id) => $client->webhooks->deliveries($id),
        'webhooks->iterateDeliveries' => fn (Client $client, string $id) => iterator_to_array($client->webhooks->iterateDeliveries($id)),
        'webhooks->delivery (webhook)' => fn (Client $client, string $id) => $client->webhooks->delivery($id, 'dlv_0'),
        'webhooks->delivery (delivery)' => fn (Client $client, string $id) => $client->webhooks->delivery('wh_0', $id),
        'webhooks->redeliver (webhook)' => fn (Client $client, string $id) => $client->webhooks->redeliver($id, 'dlv_0'),
        'webhooks->redeliver (delivery)' => fn (Client $client, string $id) => $client->webhooks->redeliver('wh_0', $id),
        'apiKeys->revoke' => fn (Client $client, string $id) => $client->apiKeys->revoke($id),
    ];
}

test('an id that cannot name a resource throws InvalidRequestException before any request', function () {
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'));
    try {
        $client = live(baseUrl: $proxy->url);
        // Each would end in another route (the listing for '', the parent for '..'), or a path a proxy rewrites.
        foreach (callsTakingAnId() as $call => $send) {
            foreach (['', '.', '..', 'a/b', 'file?x=1', 'file#top'] as $bad) {
                try {
                    $send($client, $bad);
                    throw new RuntimeException("$call('$bad') did not throw");
                } catch (InvalidRequestException $error) {
                    same(['invalid_request', null], [$error->getErrorCode(), $error->getStatus()], "$call('$bad')");
                    same(1, preg_match('/^(file|folder|share|webhook|delivery|key)_id$/', $error->getDetails()['fields'][0]['field']), "$call('$bad') names the field");
                }
            }
        }
        same(0, $proxy->count(), 'requests sent');
    } finally {
        $proxy->close();
    }
});

test('a share token is sent percent-encoded, and an unknown one is not found; an empty one is refused', function () {
    $proxy = TestProxy::start((string) getenv('FILE_STORAGE_BASE_URL'));
    try {
        $client = live(baseUrl: $proxy->url);
        foreach (['', 'https://files.example.com/'] as $empty) {
            foreach ([fn () => $client->shares->open($empty), fn () => $client->shares->download($empty, fn (string $chunk) => null)] as $send) {
                try {
                    $send();
                    throw new RuntimeException("'$empty' did not throw");
                } catch (InvalidRequestException) {
                }
            }
        }
        same(0, $proxy->count(), 'requests sent for an empty token');
        foreach (['.' => '%2E', '..' => '%2E%2E', 'a/b?c#d' => 'a%2Fb%3Fc%23d'] as $token => $sent) {
            foreach ([fn () => $client->shares->open($token), fn () => $client->shares->download($token, fn (string $chunk) => null)] as $send) {
                try {
                    $send();
                    throw new RuntimeException("'$token' did not throw");
                } catch (NotFoundException) {
                }
            }
            same(1, $proxy->count('#^GET /s/' . preg_quote($sent, '#') . ' #'), "the request for '$token'");
            same(1, $proxy->count('#^GET /s/' . preg_quote($sent, '#') . '/download #'), "the download request for '$token'");
        }
    } finally {
        $proxy->close();
    }
});

echo "\n$count tests, $failures failed\n";
exit($failures === 0 ? 0 : 1);
