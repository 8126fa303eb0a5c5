<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Exception\InvalidRequestException;

/** Builds `/v1/files/{file_id}`-style paths with each id checked and escaped, and the paths of share tokens. */
final class Paths
{
    /**
     * `Paths::of('/v1/files/{file_id}/restore', ['file_id' => $id])`: each id checked (see id()), then percent-encoded.
     *
     * @param array<string, string> $ids
     */
    public static function of(string $template, array $ids): string
    {
        $encoded = [];
        foreach ($ids as $field => $value) {
            self::id($value, $field);
            $encoded['{' . $field . '}'] = rawurlencode($value);
        }
        return strtr($template, $encoded);
    }

    /**
     * An id as the API gives them (`file_…`) names one resource. An empty one, `.` or `..`, or one with `/`, `?` or `#`,
     * would send the request to another route (the listing, the parent; curl itself resolves dot segments) or a path a
     * proxy rewrites: it is refused here, before sending, instead of ending in a confusing 404 or another route's answer.
     */
    public static function id(string $value, string $field): void
    {
        if (!in_array($value, ['', '.', '..'], true) && strpbrk($value, '/?#') === false) {
            return;
        }
        throw self::invalid($field, 'must be an id as the API gives it (not empty, . or .., and without /, ? or #), not ' . var_export($value, true));
    }

    /**
     * The path segment of a share url's token (its last path segment) or of the token itself, percent-encoded. A token
     * is whatever a visitor pasted, so it is sent as it is, `.` and `..` encoded too (curl and proxies would resolve
     * them as the parent path), and the server answers not found for one it never gave; only an empty one is refused.
     */
    public static function shareToken(string $urlOrToken): string
    {
        $token = $urlOrToken;
        if (preg_match('#^https?://#i', $urlOrToken) === 1) {
            $segments = array_values(array_filter(explode('/', (string) parse_url($urlOrToken, PHP_URL_PATH)), static fn (string $part) => $part !== ''));
            $token = rawurldecode((string) end($segments));
        }
        if ($token === '') {
            throw self::invalid('url_or_token', 'must be a share url or its token, not ' . var_export($urlOrToken, true));
        }
        return in_array($token, ['.', '..'], true) ? str_replace('.', '%2E', $token) : rawurlencode($token);
    }

    /** The exception the server would answer for a bad field, thrown before any request is sent. */
    private static function invalid(string $field, string $problem): InvalidRequestException
    {
        return new InvalidRequestException('invalid_request', "Request validation failed: $field: $problem", null, ['fields' => [['field' => $field, 'message' => $problem]]]);
    }
}
