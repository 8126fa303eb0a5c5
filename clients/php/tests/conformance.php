<?php

declare(strict_types=1);

// The conformance scenario of clients/conformance/scenario.json, run with this library against a live server. The
// harness (clients/conformance/conformance.e2e-spec.ts) sets FSS_BASE_URL, FSS_API_KEY, FSS_FREE_API_KEY,
// FSS_SCENARIO, FSS_REPORT, FSS_WORK_DIR and FSS_PAST_LINK_EXPIRY_URL (see clients/conformance/scenario.md). Each step runs in the scenario's
// order; its outcome goes into the report the harness reads. Exits non-zero when a step failed.

require __DIR__ . '/../autoload.php';
require __DIR__ . '/test_proxy.php';

use FileStorage\Client;
use FileStorage\Exception\ConnectionException;
use FileStorage\Exception\NotFoundException;
use FileStorage\Exception\PasswordRequiredException;
use FileStorage\Exception\RateLimitException;
use FileStorage\Http\HttpClient;
use FileStorage\Upload\Tus;
use FileStorage\Webhook;

const MIB = 1024 * 1024;

final class StepSkipped extends Exception
{
}

function check(bool $condition, string $message): void
{
    if (!$condition) {
        throw new RuntimeException("check failed: $message");
    }
}

function checkSame(mixed $expected, mixed $actual, string $what): void
{
    if ($expected !== $actual) {
        throw new RuntimeException("check failed: $what: expected " . json_encode($expected) . ', got ' . json_encode($actual));
    }
}

function writeRandomFile(string $path, int $size): string
{
    $hash = hash_init('md5');
    $out = fopen($path, 'wb');
    for ($left = $size; $left > 0; $left -= strlen($chunk)) {
        $chunk = random_bytes(min($left, MIB));
        hash_update($hash, $chunk);
        fwrite($out, $chunk);
    }
    fclose($out);
    return hash_final($hash);
}

function memoryStream(string $bytes)
{
    $stream = fopen('php://memory', 'w+');
    fwrite($stream, $bytes);
    rewind($stream);
    return $stream;
}

/** The first `$event` delivery (its X-Service-Event header) to a loopback receiver: [headers, raw body]. */
function receiveDelivery($server, string $event, int $seconds): array
{
    $deadline = microtime(true) + $seconds;
    while (true) {
        $left = $deadline - microtime(true);
        check($left > 0, "no $event delivery within $seconds s");
        $socket = @stream_socket_accept($server, $left);
        if ($socket === false) {
            continue;
        }
        $head = '';
        while (!str_contains($head, "\r\n\r\n") && !feof($socket)) {
            $head .= fread($socket, 16384);
        }
        [$headerText, $body] = explode("\r\n\r\n", $head, 2);
        $headers = [];
        foreach (array_slice(explode("\r\n", $headerText), 1) as $line) {
            [$name, $value] = explode(':', $line, 2);
            $headers[trim($name)] = trim($value);
        }
        $lower = array_change_key_case($headers);
        while (strlen($body) < (int) ($lower['content-length'] ?? 0) && !feof($socket)) {
            $body .= fread($socket, (int) $lower['content-length'] - strlen($body));
        }
        fwrite($socket, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        fclose($socket);
        if (($lower['x-service-event'] ?? null) === $event) {
            return [$headers, $body];
        }
    }
}

$scenario = [];
foreach (json_decode(file_get_contents(getenv('FSS_SCENARIO')), true)['steps'] as $entry) {
    $scenario[$entry['id']] = $entry;
}
$params = fn (string $id): array => $scenario[$id]['params'] ?? [];
$baseUrl = getenv('FSS_BASE_URL');
$apiKey = getenv('FSS_API_KEY');
$workDir = getenv('FSS_WORK_DIR');
$client = new Client($apiKey, $baseUrl);
$state = [];
$uploadSmall = function (string $name) use ($client, &$state): array {
    return $client->files->upload(memoryStream(str_repeat($name, 3)), ['name' => $name, 'folderId' => $state['folder']['id']]);
};

$steps = [];

$steps['create_folder'] = function () use ($client, $params, &$state) {
    $name = $params('create_folder')['folder_name'];
    $folder = $client->folders->create($name);
    check(str_starts_with($folder['id'], 'fld_'), 'an fld_ id');
    checkSame([$name, null], [$folder['name'], $folder['parent_id']], 'name and parent');
    $state['folder'] = $folder;
};

$steps['upload_streamed'] = function () use ($client, $params, $workDir, &$state) {
    $p = $params('upload_streamed');
    $path = "$workDir/{$p['file_name']}";
    $localMd5 = writeRandomFile($path, $p['size_bytes']);
    $progress = [];
    $uploaded = $client->files->upload($path, ['folderId' => $state['folder']['id'], 'onProgress' => function (int $sent) use (&$progress) {
        $progress[] = $sent;
    }]);
    checkSame([$p['file_name'], $p['size_bytes'], $localMd5], [$uploaded['name'], $uploaded['size'], $uploaded['md5_hash']], 'the stored file');
    checkSame($p['size_bytes'], end($progress), 'the last progress report');
    $state += ['big_file' => $uploaded, 'big_path' => $path, 'big_md5' => $localMd5];
};

$steps['list_paginated'] = function () use ($client, $params, $uploadSmall, &$state) {
    $p = $params('list_paginated');
    foreach ($p['extra_files'] as $name) {
        $state['small'][$name] = $uploadSmall($name);
    }
    $query = ['folder_id' => $state['folder']['id'], 'search' => $p['search'], 'sort' => $p['sort'], 'per_page' => $p['per_page']];
    check($client->files->list($query)->pagination['total_pages'] > 1, 'more than one page');
    $names = array_map(fn ($f) => $f['name'], iterator_to_array($client->files->iterate($query), false));
    checkSame(['conformance-a.txt', 'conformance-b.txt', 'conformance.bin'], $names, 'iterated names');
};

$steps['download_compare'] = function () use ($client, $workDir, &$state) {
    $big = $state['big_file'];
    $target = "$workDir/downloaded.bin";
    $client->files->download($big['id'], $target);
    checkSame(filesize($state['big_path']), filesize($target), 'downloaded size');
    checkSame($state['big_md5'], md5_file($target), 'downloaded MD5');
    $hash = hash_init('md5');
    $client->files->download($big['id'], function (string $chunk) use ($hash) {
        hash_update($hash, $chunk);
    });
    checkSame($state['big_md5'], hash_final($hash), 'streamed MD5');
};

$steps['share_password'] = function () use ($client, $params, &$state) {
    $password = $params('share_password')['password'];
    $share = $client->shares->create(['file_id' => $state['small']['conformance-a.txt']['id'], 'password' => $password]);
    check($share['password_protected'] === true, 'password_protected');
    try {
        $client->shares->open($share['url']);
        throw new RuntimeException('check failed: opened without the password');
    } catch (PasswordRequiredException $e) {
        checkSame([401, 'password_required'], [$e->getStatus(), $e->getErrorCode()], 'the refusal');
    }
    checkSame('conformance-a.txt', $client->shares->open($share['url'], $password)['file']['name'], 'the shared file');
    $content = fopen('php://memory', 'w+');
    $client->shares->download($share['url'], $content, $password);
    rewind($content);
    checkSame(str_repeat('conformance-a.txt', 3), stream_get_contents($content), 'the shared bytes');
};

$steps['trash_restore'] = function () use ($client, &$state) {
    $folderId = $state['folder']['id'];
    $victim = $state['small']['conformance-a.txt'];
    $ids = fn (iterable $items) => array_map(fn ($item) => $item['id'], iterator_to_array($items, false));
    $deleted = $client->files->delete($victim['id']);
    check($deleted['id'] === $victim['id'] && $deleted['recoverable_until'] !== null, 'the trashed file');
    check(in_array($victim['id'], $ids($client->trash->iterate()), true), 'listed in the trash');
    check(!in_array($victim['id'], $ids($client->files->iterate(['folder_id' => $folderId])), true), 'gone from its folder');
    $restored = $client->files->restore($victim['id']);
    checkSame([$victim['id'], $folderId], [$restored['id'], $restored['folder_id']], 'the restored file');
    check(in_array($victim['id'], $ids($client->files->iterate(['folder_id' => $folderId])), true), 'back in its folder');
};

$steps['bulk_delete'] = function () use ($client, &$state) {
    $ids = [$state['small']['conformance-b.txt']['id'], $state['small']['other.txt']['id']];
    $result = $client->files->bulkDelete([...$ids, 'file_doesnotexist']);
    checkSame($ids, $result['deleted'], 'deleted');
    checkSame([3, 2, 1], [$result['total'], $result['deleted_count'], $result['failed_count']], 'counts');
    checkSame(['file_doesnotexist', 'not_found'], [$result['failed'][0]['id'], $result['failed'][0]['error']['code']], 'the failure');
};

$steps['webhook_signature'] = function () use ($client, $params, $uploadSmall) {
    $p = $params('webhook_signature');
    $server = stream_socket_server('tcp://127.0.0.1:0');
    try {
        $webhook = $client->webhooks->create(['url' => 'http://' . stream_socket_get_name($server, false) . '/hooks', 'events' => $p['events'], 'secret' => $p['secret']]);
        $probe = $uploadSmall('webhook-probe.txt');
        [$headers, $body] = receiveDelivery($server, 'file.uploaded', 30);
        check(Webhook::verify($body, $headers, $p['secret']), 'the signature verifies');
        check(!Webhook::verify($body, $headers, 'another-secret'), 'not with another secret');
        check(!Webhook::verify("$body ", $headers, $p['secret']), 'not for an altered body');
        $parsed = json_decode($body, true);
        checkSame(['file.uploaded', $webhook['id'], $probe['id']], [$parsed['event'], $parsed['webhook_id'], $parsed['data']['file']['id']], 'the delivery');
        $client->webhooks->delete($webhook['id']);
    } finally {
        fclose($server);
    }
};

$steps['event_feed'] = function () use ($client, &$state) {
    try {
        $client->events->list(['limit' => 1]);
    } catch (NotFoundException $e) {
        // The one step a server may not support yet: the harness accepts the skip only when the route is missing.
        throw new StepSkipped("GET /v1/events is not on this server ({$e->getStatus()} {$e->getErrorCode()}): the event feed cannot be read");
    }
    $wanted = [['folder.created', 'folder', $state['folder']['id']], ['file.uploaded', 'file', $state['big_file']['id']]];
    $seen = [];
    $found = [];
    $cursor = null;
    $deadline = microtime(true) + 30;
    while (count($found) < count($wanted)) {
        $feed = $client->events->iterate(after: $cursor, stopWhenIdle: true);
        foreach ($feed as $event) {
            $keys = array_keys($event);
            sort($keys);
            checkSame(['data', 'event', 'id', 'timestamp'], $keys, 'the event fields');
            check(!isset($seen[$event['id']]), 'an event was read twice');
            $seen[$event['id']] = true;
            foreach ($wanted as $i => [$name, $key, $id]) {
                if ($event['event'] === $name && ($event['data'][$key]['id'] ?? null) === $id) {
                    $found[$i] = true;
                }
            }
        }
        $cursor = $feed->getReturn();
        if (count($found) < count($wanted)) {
            check(microtime(true) < $deadline, 'the feed did not show every expected event within 30 s');
            usleep(200_000);
        }
    }
    foreach ($client->events->list(['after' => $cursor])['data'] as $event) {
        check(!isset($seen[$event['id']]), 'reading on from next_cursor repeated events');
    }
};

$steps['rate_limit_retry'] = function () use ($baseUrl) {
    $strict = new Client(getenv('FSS_FREE_API_KEY'), $baseUrl, maxRetries: 0);
    $refused = null;
    $refusedAt = 0.0;
    // A window about to reset leaves no time to be sure the next request is refused too: wait for the next one.
    for ($round = 0; $round < 3; $round++) {
        $refused = null;
        for ($i = 0; $i < 500 && $refused === null; $i++) {
            try {
                $strict->user->info();
            } catch (RateLimitException $e) {
                [$refused, $refusedAt] = [$e, hrtime(true) / 1e9];
            }
        }
        check($refused !== null, '500 requests of a Free account were never refused');
        if (($refused->getRetryAfter() ?? 0) >= 3) {
            break;
        }
        usleep((int) (($refused->getRetryAfter() ?? 1) * 1e6));
    }
    checkSame([429, 'rate_limit_exceeded'], [$refused->getStatus(), $refused->getErrorCode()], 'the refusal');
    $retryAfter = $refused->getRetryAfter() ?? 0;
    check($retryAfter >= 3, "retry_after of at least 3 s in one of three windows (last: $retryAfter)");
    $retrying = new Client(getenv('FSS_FREE_API_KEY'), $baseUrl, maxRetries: 3);
    $sentAt = hrtime(true) / 1e9;
    $folder = $retrying->folders->create('After the limit');
    $doneAt = hrtime(true) / 1e9;
    // Sent while the window that refused was still open, the first attempt was refused too; it succeeded only by
    // waiting for that window to end.
    check($sentAt - $refusedAt < $retryAfter - 1, 'the create was sent while the account was still limited');
    check($doneAt - $refusedAt >= $retryAfter - 1, sprintf('the create waited for the window to end (%.1f s of %d)', $doneAt - $refusedAt, $retryAfter));
    checkSame([$folder['id']], array_map(fn ($f) => $f['id'], iterator_to_array($retrying->folders->iterate(), false)), 'the folder exists once');
};

$steps['resume_upload'] = function () use ($params, $apiKey, $baseUrl, $workDir, &$state) {
    $p = $params('resume_upload');
    [$size, $chunk] = [$p['size_bytes'], $p['chunk_bytes']];
    $path = "$workDir/resumable.bin";
    $localMd5 = writeRandomFile($path, $size);
    $proxy = TestProxy::start($baseUrl);
    try {
        $throughProxy = new Client($apiKey, $proxy->url, maxRetries: 0, resumableChunk: $chunk);
        $location = $throughProxy->files->startResumableUpload($path, ['folderId' => $state['folder']['id']]);
        // The first PATCH (chunk and headers) passes, the second is cut mid-way.
        $proxy->cut('request', $chunk + intdiv($chunk, 2) + 2048, '#^PATCH #');
        try {
            $throughProxy->files->resumeUpload($location, $path);
            throw new RuntimeException('check failed: the cut upload did not fail');
        } catch (ConnectionException) {
        }
        checkSame(1, $proxy->cuts(), 'cuts');
    } finally {
        $proxy->close();
    }
    [$offset] = Tus::where(new HttpClient($apiKey, $baseUrl), $location);
    check($offset >= $chunk && $offset < $size, "the server kept $offset bytes");
    $file = (new Client($apiKey, $baseUrl, resumableChunk: $chunk))->files->resumeUpload($location, $path);
    checkSame(['resumable.bin', $size, $localMd5, $state['folder']['id']], [$file['name'], $file['size'], $file['md5_hash'], $file['folder_id']], 'the resumed file');
};

$steps['resume_download'] = function () use ($client, $params, $apiKey, $baseUrl, $workDir, &$state) {
    $firstBytes = $params('resume_download')['first_bytes'];
    $big = $state['big_file'];
    $target = "$workDir/resumed-download.bin";
    $client->files->download($big['id'], $target, start: 0, end: $firstBytes - 1);
    checkSame(md5((string) file_get_contents($state['big_path'], false, null, 0, $firstBytes)), md5_file($target), 'the first bytes');
    $proxy = TestProxy::start($baseUrl)->ignoreRanges('#/download\?#');
    try {
        $rest = fopen($target, 'ab');
        clearstatcache();
        (new Client($apiKey, $proxy->url))->files->download($big['id'], $rest, start: (int) filesize($target));
        fclose($rest);
        checkSame(1, $proxy->count('#/download\?#'), 'downloads through the proxy');
    } finally {
        $proxy->close();
    }
    clearstatcache();
    checkSame([$big['size'], $state['big_md5']], [filesize($target), md5_file($target)], 'the resumed download');
};

$steps['download_past_link_expiry'] = function () use ($apiKey, $workDir, &$state) {
    $big = $state['big_file'];
    $target = "$workDir/past-link-expiry.bin";
    (new Client($apiKey, (string) getenv('FSS_PAST_LINK_EXPIRY_URL')))->files->download($big['id'], $target);
    clearstatcache();
    checkSame([$big['size'], $state['big_md5']], [filesize($target), md5_file($target)], 'the continued download');
};

checkSame(array_keys($scenario), array_keys($steps), "the runner's steps");
$results = [];
foreach ($steps as $id => $body) {
    try {
        $body();
        echo "ok $id\n";
        $results[] = ['id' => $id, 'status' => 'passed'];
    } catch (StepSkipped $skip) {
        echo "skipped $id: {$skip->getMessage()}\n";
        $results[] = ['id' => $id, 'status' => 'skipped', 'reason' => $skip->getMessage()];
    } catch (Throwable $error) {
        $text = $error::class . ': ' . $error->getMessage() . "\n" . $error->getTraceAsString();
        echo "FAILED $id: $text\n";
        $results[] = ['id' => $id, 'status' => 'failed', 'error' => $text];
    }
}
file_put_contents(getenv('FSS_REPORT'), json_encode(['language' => 'php', 'steps' => $results], JSON_PRETTY_PRINT));
exit(in_array('failed', array_column($results, 'status'), true) ? 1 : 0);
