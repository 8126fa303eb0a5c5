<?php

declare(strict_types=1);

namespace FileStorage\Resource;

use FileStorage\Http\HttpClient;
use FileStorage\Page;

final class Webhooks
{
    use Listing;

    public function __construct(HttpClient $http)
    {
        $this->http = $http;
    }

    /**
     * Registers a webhook (url, events); the answer shows its signing secret this once.
     *
     * @param array<string, mixed> $webhook
     * @return array<string, mixed>
     */
    public function create(array $webhook, ?string $idempotencyKey = null): array
    {
        return $this->http->data('POST', '/v1/webhooks', ['json' => $webhook, 'headers' => self::idempotency($idempotencyKey)]);
    }

    /** @param array<string, mixed> $query */
    public function list(array $query = []): Page
    {
        return $this->fetchPage('/v1/webhooks', $query);
    }

    /**
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    public function iterate(array $query = []): \Generator
    {
        return $this->eachItem('/v1/webhooks', $query);
    }

    /** @return array<string, mixed> */
    public function get(string $webhookId): array
    {
        return $this->http->data('GET', Paths::of('/v1/webhooks/{webhook_id}', ['webhook_id' => $webhookId]));
    }

    /**
     * @param array<string, mixed> $changes
     * @return array<string, mixed>
     */
    public function update(string $webhookId, array $changes): array
    {
        return $this->http->data('PATCH', Paths::of('/v1/webhooks/{webhook_id}', ['webhook_id' => $webhookId]), ['json' => $changes]);
    }

    /** @return array<string, mixed> */
    public function delete(string $webhookId): array
    {
        return $this->http->data('DELETE', Paths::of('/v1/webhooks/{webhook_id}', ['webhook_id' => $webhookId]));
    }

    /**
     * Sends a `webhook.test` event to the webhook; answers the queued delivery.
     *
     * @return array<string, mixed>
     */
    public function test(string $webhookId, ?string $idempotencyKey = null): array
    {
        return $this->http->data('POST', Paths::of('/v1/webhooks/{webhook_id}/test', ['webhook_id' => $webhookId]), ['headers' => self::idempotency($idempotencyKey)]);
    }

    /** @param array<string, mixed> $query page, per_page, status, cursor */
    public function deliveries(string $webhookId, array $query = []): Page
    {
        return $this->fetchPage(Paths::of('/v1/webhooks/{webhook_id}/deliveries', ['webhook_id' => $webhookId]), $query);
    }

    /**
     * @param array<string, mixed> $query
     * @return \Generator<int, array<string, mixed>>
     */
    public function iterateDeliveries(string $webhookId, array $query = []): \Generator
    {
        return $this->eachItem(Paths::of('/v1/webhooks/{webhook_id}/deliveries', ['webhook_id' => $webhookId]), $query);
    }

    /** @return array<string, mixed> */
    public function delivery(string $webhookId, string $deliveryId): array
    {
        return $this->http->data('GET', Paths::of('/v1/webhooks/{webhook_id}/deliveries/{delivery_id}', ['webhook_id' => $webhookId, 'delivery_id' => $deliveryId]));
    }

    /**
     * A new signing secret, shown this once. For $expiresIn seconds (default 24 hours) deliveries are signed with
     * both the old and the new secret, so receivers can switch over.
     *
     * @return array<string, mixed>
     */
    public function rotateSecret(string $webhookId, ?int $expiresIn = null, ?string $idempotencyKey = null): array
    {
        $body = $expiresIn === null ? new \stdClass() : ['expires_in' => $expiresIn];
        return $this->http->data('POST', Paths::of('/v1/webhooks/{webhook_id}/rotate-secret', ['webhook_id' => $webhookId]), ['json' => $body, 'headers' => self::idempotency($idempotencyKey)]);
    }

    /**
     * Queues a new delivery of every retained event from $since until $until (exclusive; now when null) that the
     * webhook subscribes to; answers ['queued' => count].
     *
     * @return array<string, mixed>
     */
    public function replay(string $webhookId, \DateTimeInterface|string $since, \DateTimeInterface|string|null $until = null, ?string $idempotencyKey = null): array
    {
        $iso = static fn ($time) => $time instanceof \DateTimeInterface
            ? \DateTimeImmutable::createFromInterface($time)->setTimezone(new \DateTimeZone('UTC'))->format('Y-m-d\\TH:i:s.v\\Z')
            : $time;
        $window = ['since' => $iso($since)] + ($until === null ? [] : ['until' => $iso($until)]);
        return $this->http->data('POST', Paths::of('/v1/webhooks/{webhook_id}/replay', ['webhook_id' => $webhookId]), ['json' => $window, 'headers' => self::idempotency($idempotencyKey)]);
    }

    /**
     * Sends a delivery again (same delivery id); answers the delivery, queued.
     *
     * @return array<string, mixed>
     */
    public function redeliver(string $webhookId, string $deliveryId, ?string $idempotencyKey = null): array
    {
        return $this->http->data('POST', Paths::of('/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver', ['webhook_id' => $webhookId, 'delivery_id' => $deliveryId]), ['headers' => self::idempotency($idempotencyKey)]);
    }
}
