import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplicationContext } from '@nestjs/common';
import { Transactions } from '../../src/infra/database/transactions.js';
import type { EventName } from '../../src/infra/outbox/domain-event.js';
import { domainEvent, Outbox } from '../../src/infra/outbox/outbox.js';

export interface ReceivedDelivery {
  /** performance.now() when the request arrived. */
  at: number;
  /** Date.now() when the request arrived, comparable with times other processes (e.g. BullMQ) record. */
  receivedAt: number;
  /** Date.now() when the answer was sent; undefined until then. */
  answeredAt?: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  body: { event: string; timestamp: string; webhook_id: string; data: Record<string, unknown>; signature: string };
}

/** How the receiver answers: a status code, optionally after a delay (ms). */
export type Responder = (delivery: ReceivedDelivery, index: number) => number | { status: number; delayMs: number };

export interface WebhookReceiver {
  url: string;
  received: ReceivedDelivery[];
  respondWith(responder: Responder): void;
  /** Resolves once `predicate` holds for what was received, or fails after `timeoutMs`. */
  waitFor(predicate: (received: ReceivedDelivery[]) => boolean, timeoutMs?: number, what?: string): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every webhook delivery it gets. */
export async function startWebhookReceiver(responder: Responder = () => 200): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  let respond = responder;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: ReceivedDelivery['body'];
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined as never;
      }
      const delivery: ReceivedDelivery = { at: performance.now(), receivedAt: Date.now(), method: request.method ?? '', path: request.url ?? '', headers: request.headers, rawBody, body };
      received.push(delivery);
      const answer = respond(delivery, received.length - 1);
      const { status, delayMs } = typeof answer === 'number' ? { status: answer, delayMs: 0 } : answer;
      const send = () => {
        if (response.destroyed) return;
        delivery.answeredAt = Date.now();
        response.writeHead(status, { 'Content-Type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
      };
      if (delayMs > 0) setTimeout(send, delayMs).unref();
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    respondWith(next) {
      respond = next;
    },
    async waitFor(predicate, timeoutMs = 10_000, what = 'deliveries') {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; received ${received.length}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Records a domain event the way modules do: through the outbox, in a transaction. Answers the event id.
 */
export async function recordEvent(app: INestApplicationContext, name: EventName, accountId: string, data: Record<string, unknown>, occurredAt = new Date()): Promise<string> {
  const event = domainEvent(name, accountId, occurredAt, data);
  await app.get(Transactions).run((tx) => Outbox.record(tx, event));
  return event.id;
}
