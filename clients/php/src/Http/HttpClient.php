<?php

declare(strict_types=1);

namespace FileStorage\Http;

use FileStorage\Exception\ConnectionException;
use FileStorage\Exception\ErrorFactory;
use FileStorage\Exception\FileStorageException;
use FileStorage\Exception\TimeoutException;

/** Sends requests with ext-curl: authentication, timeouts, retries with backoff and the automatic Idempotency-Key of POSTs. */
final class HttpClient
{
    private const RETRYABLE_STATUSES = [429, 502, 503, 504];
    private const MAX_BACKOFF = 8.0;
    /** The longest Retry-After waited out before a retry; a longer one is thrown at once. */
    private const MAX_RETRY_AFTER = 120;

    public readonly string $baseUrl;

    public function __construct(
        #[\SensitiveParameter] private readonly string $apiKey,
        string $baseUrl,
        public readonly int $timeout = 60,
        public readonly int $maxRetries = 2,
    ) {
        if ($apiKey === '') {
            throw new \InvalidArgumentException('FileStorage needs an apiKey.');
        }
        if ($baseUrl === '') {
            throw new \InvalidArgumentException('FileStorage needs a baseUrl.');
        }
        // curl would take a URL without a scheme for http://, sending the API key unencrypted.
        if (preg_match('#^https?://[^/?\#]+#i', $baseUrl) !== 1) {
            throw new \InvalidArgumentException("baseUrl must be an http(s) URL such as https://files.example.com, not '$baseUrl'.");
        }
        $this->baseUrl = rtrim($baseUrl, '/');
    }

    /**
     * What var_dump() and print_r() show: everything but the API key, which would end up in logs.
     *
     * @return array<string, mixed>
     */
    public function __debugInfo(): array
    {
        return ['baseUrl' => $this->baseUrl, 'timeout' => $this->timeout, 'maxRetries' => $this->maxRetries, 'apiKey' => '[redacted]'];
    }

    /** @param array<string, mixed> $query */
    public function url(string $path, array $query = []): string
    {
        $query = array_filter($query, static fn ($value) => $value !== null);
        $query = array_map(static fn ($value) => is_bool($value) ? ($value ? 'true' : 'false') : (string) $value, $query);
        // A path goes under the base URL, path prefix included (a server mounted under /storage by a reverse proxy);
        // an absolute URL (a tus Location a proxy rewrote, say) is taken as it is.
        $url = preg_match('#^https?://#i', $path) === 1 ? $path : $this->baseUrl . '/' . ltrim($path, '/');
        if ($query !== []) {
            $url .= (str_contains($url, '?') ? '&' : '?') . http_build_query($query, '', '&', PHP_QUERY_RFC3986);
        }
        return $url;
    }

    /**
     * The JSON envelope's `data` of a successful answer.
     *
     * @param array<string, mixed> $options see send()
     */
    public function data(string $method, string $path, array $options = []): mixed
    {
        return $this->send($method, $path, $options)->json()['data'];
    }

    /**
     * One logical request: retried on 429 and 409 idempotency_key_in_use (after Retry-After), 502/503/504 and
     * network errors, with exponential backoff, as long as its body can be sent again; a Retry-After beyond
     * MAX_RETRY_AFTER is thrown at once, as a retry before it could only be refused again. Every attempt of a POST
     * carries the same Idempotency-Key, so a retry after a lost answer replays the first result instead of acting
     * twice.
     *
     * Options: query (array), json (mixed), body (RequestBody), headers (array), anonymous (bool), retryable
     * (bool, default true), sink (callable(string): void — a successful answer's body is streamed to it; a retry after
     * some of it was written resumes with Range and If-Range, or fails, and never writes a byte twice), refreshPath
     * (callable(): string — gives the path again for each later attempt: a signed link's fresh signature, as a long
     * download outlives the hour of the link it began with).
     *
     * @param array<string, mixed> $options
     */
    public function send(string $method, string $path, array $options = []): Response
    {
        $headers = ['Accept' => 'application/json'] + ($options['headers'] ?? []);
        if (!($options['anonymous'] ?? false)) {
            $headers['Authorization'] = 'Bearer ' . $this->apiKey;
        }
        if ($method === 'POST' && !self::hasHeader($headers, 'idempotency-key')) {
            $headers['Idempotency-Key'] = self::uuid();
        }
        $body = $options['body'] ?? null;
        if (array_key_exists('json', $options)) {
            $headers['Content-Type'] = 'application/json';
        } elseif ($body instanceof RequestBody && $body->contentType !== null) {
            $headers['Content-Type'] = $body->contentType;
        }
        $url = $this->url($path, $options['query'] ?? []);
        $shown = self::describe($method, $path);
        $retries = !($options['retryable'] ?? true) || ($body instanceof RequestBody && !$body->replayable) ? 0 : $this->maxRetries;
        $sink = isset($options['sink']) ? new ResumableSink($options['sink'], $headers['Range'] ?? null) : null;

        for ($attempt = 0; ; $attempt++) {
            if ($attempt > 0 && isset($options['refreshPath'])) {
                $url = $this->url(($options['refreshPath'])(), $options['query'] ?? []);
            }
            try {
                // The sink's Range (the rest of the body) replaces the caller's on a retry.
                $response = $this->perform($method, $url, ($sink?->beginAttempt() ?? []) + $headers, $options, $shown, $sink);
            } catch (ConnectionException | TimeoutException $error) {
                $notResumable = $sink?->whyNotResumable();
                if ($notResumable !== null) {
                    throw new ConnectionException(
                        'connection_error',
                        "$shown broke off after {$sink->written()} bytes of the body and cannot be resumed: $notResumable ({$error->getMessage()})",
                        previous: $error,
                    );
                }
                if ($attempt >= $retries) {
                    throw $error;
                }
                usleep((int) (self::backoff($attempt) * 1e6));
                continue;
            }
            if ($response->status < 400) {
                return $response;
            }
            $retryAfter = RetryAfter::parse($response->header('retry-after'));
            if ($attempt < $retries && self::worthRetrying($response) && ($retryAfter ?? 0) <= self::MAX_RETRY_AFTER) {
                usleep((int) (($retryAfter ?? self::backoff($attempt)) * 1e6));
                continue;
            }
            throw ErrorFactory::fromResponse($response->status, $response->headers, (string) $response->body);
        }
    }

    /**
     * 429, 502, 503, 504, and a 409 `idempotency_key_in_use`: the first request with this key still runs, and the
     * retry after Retry-After gets its stored answer.
     */
    private static function worthRetrying(Response $response): bool
    {
        if (in_array($response->status, self::RETRYABLE_STATUSES, true)) {
            return true;
        }
        if ($response->status !== 409) {
            return false;
        }
        $envelope = json_decode((string) $response->body, true);
        return is_array($envelope) && is_array($envelope['error'] ?? null) && ($envelope['error']['code'] ?? null) === 'idempotency_key_in_use';
    }

    /** "GET /v1/files/…" for messages, without the query string: a download's carries a signature valid for an hour. */
    private static function describe(string $method, string $path): string
    {
        return "$method " . preg_replace('/\?.*/s', '?<redacted>', $path);
    }

    /** 0.5 s, 1 s, 2 s… with full jitter, at most 8 s. */
    public static function backoff(int $attempt): float
    {
        $ceiling = min(self::MAX_BACKOFF, 0.5 * 2 ** $attempt);
        return $ceiling / 2 + mt_rand() / mt_getrandmax() * $ceiling / 2;
    }

    /**
     * @param array<string, string> $headers
     * @param array<string, mixed> $options
     */
    private function perform(string $method, string $url, array $headers, array $options, string $shown, ?ResumableSink $sink): Response
    {
        $curl = curl_init($url);
        $status = 0;
        $answerHeaders = [];
        $buffer = '';
        $reader = null;
        $curlOptions = [
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_CONNECTTIMEOUT => $this->timeout,
            // No total limit (uploads and downloads take as long as they take): give up when nothing moves.
            CURLOPT_LOW_SPEED_LIMIT => 1,
            CURLOPT_LOW_SPEED_TIME => $this->timeout,
            CURLOPT_HEADERFUNCTION => static function ($curl, string $line) use (&$status, &$answerHeaders): int {
                if (preg_match('#^HTTP/\S+\s+(\d{3})#', $line, $match) === 1) {
                    $status = (int) $match[1];
                    $answerHeaders = [];
                } elseif (str_contains($line, ':')) {
                    [$name, $value] = explode(':', $line, 2);
                    $answerHeaders[strtolower(trim($name))] = trim($value);
                }
                return strlen($line);
            },
            CURLOPT_WRITEFUNCTION => static function ($curl, string $chunk) use (&$status, &$answerHeaders, &$buffer, $sink): int {
                if ($sink !== null && $status < 400) {
                    // 0 aborts the transfer: this answer does not continue what the sink already has.
                    return $sink->write($status, $answerHeaders, $chunk) ? strlen($chunk) : 0;
                }
                $buffer .= $chunk;
                return strlen($chunk);
            },
        ];
        if ($method === 'HEAD') {
            $curlOptions[CURLOPT_NOBODY] = true;
        }
        if (array_key_exists('json', $options)) {
            // An empty PHP array is an empty JSON object here: every JSON body of the API is an object, never a list.
            $json = $options['json'] === [] ? new \stdClass() : $options['json'];
            $curlOptions[CURLOPT_POSTFIELDS] = json_encode($json, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
        } elseif (($options['body'] ?? null) instanceof RequestBody) {
            $body = $options['body'];
            $reader = $body->open();
            $curlOptions[CURLOPT_UPLOAD] = true;
            $curlOptions[CURLOPT_READFUNCTION] = static fn ($curl, $handle, int $length): string => $reader->read($length);
            if ($body->size !== null) {
                $curlOptions[CURLOPT_INFILESIZE] = $body->size;
            } else {
                $headers['Transfer-Encoding'] = 'chunked';
            }
        } elseif ($method === 'POST' || $method === 'PATCH') {
            $curlOptions[CURLOPT_POSTFIELDS] = '';
        }
        // Expect: 100-continue would hold every upload for a round trip.
        $lines = ['Expect:'];
        foreach ($headers as $name => $value) {
            $lines[] = "$name: $value";
        }
        $curlOptions[CURLOPT_HTTPHEADER] = $lines;
        curl_setopt_array($curl, $curlOptions);
        try {
            $ok = curl_exec($curl);
            // The sink stopped a whole-file answer (a proxy that ignores Range) once it had the bytes asked for.
            if ($ok === false && $sink !== null && $sink->complete()) {
                return new Response($status, $answerHeaders, null, $shown);
            }
            if ($ok === false) {
                $errno = curl_errno($curl);
                $message = curl_error($curl);
                if ($errno === CURLE_OPERATION_TIMEDOUT) {
                    throw new TimeoutException('timeout', "No progress on $shown for {$this->timeout} s ($message).");
                }
                throw new ConnectionException('connection_error', "$shown failed: $message");
            }
        } finally {
            curl_close($curl);
            $reader?->close();
        }
        return new Response($status, $answerHeaders, $sink !== null && $status < 400 ? null : $buffer, $shown);
    }

    /** @param array<string, string> $headers */
    private static function hasHeader(array $headers, string $name): bool
    {
        foreach (array_keys($headers) as $key) {
            if (strtolower($key) === $name) {
                return true;
            }
        }
        return false;
    }

    private static function uuid(): string
    {
        $bytes = random_bytes(16);
        $bytes[6] = chr(ord($bytes[6]) & 0x0f | 0x40);
        $bytes[8] = chr(ord($bytes[8]) & 0x3f | 0x80);
        return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($bytes), 4));
    }
}
