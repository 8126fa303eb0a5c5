import http from 'node:http';
import https from 'node:https';
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { isIP } from 'node:net';
import { AppConfig } from '../../../config/app-config.js';
import { signAttempt } from './webhook-signature.js';
import { publicOnlyLookup, refusedConnection } from '../webhook-url-policy.js';

export const DELIVERY_TIMEOUT_MS = 30_000;
export const USER_AGENT = 'Service-Webhook/1.0';
/** An answer's body is read this far, and this long, to reuse the connection; beyond either the connection is dropped. */
const MAX_ANSWER_DRAINED_BYTES = 64 * 1024;
const ANSWER_DRAIN_MS = 5_000;

export interface DeliveryRequest {
  url: string;
  /** The webhook's signing secrets, newest first (two during a rotation's grace period). */
  secrets: readonly string[];
  deliveryId: string;
  /** The outbox event's id: `webhook-id`, the same on every attempt, redelivery and replay. */
  eventId: string;
  webhookId: string;
  event: string;
  body: string;
}

export interface AttemptResult {
  startedAt: Date;
  durationMs: number;
  responseStatus: number | null;
  error: string | null;
}

export function succeeded(result: AttemptResult): boolean {
  return result.responseStatus !== null && result.responseStatus >= 200 && result.responseStatus < 300;
}

/**
 * Sends one delivery attempt. Redirects are never followed and a request gets 30 seconds to be answered (its status line). Unless
 * WEBHOOK_ALLOW_PRIVATE_URLS is on, a delivery connects only to addresses the webhook url policy allows
 * (the same policy as at creation), checked on the addresses resolved for this very connection (so a DNS
 * answer that changed since the webhook was created is caught too).
 */
@Injectable()
export class WebhookSender implements OnApplicationShutdown {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly config: AppConfig) {
    const options = {
      keepAlive: true,
      maxSockets: 256,
      maxFreeSockets: 64,
      timeout: DELIVERY_TIMEOUT_MS,
      ...(config.webhookAllowPrivateUrls ? {} : { lookup: publicOnlyLookup }),
    };
    this.httpAgent = new http.Agent(options);
    this.httpsAgent = new https.Agent(options);
  }

  onApplicationShutdown(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  send(delivery: DeliveryRequest): Promise<AttemptResult> {
    const startedAt = new Date();
    const started = performance.now();
    const finish = (responseStatus: number | null, error: string | null): AttemptResult => ({
      startedAt,
      durationMs: Math.round(performance.now() - started),
      responseStatus,
      error,
    });
    let url: URL;
    try {
      url = new URL(delivery.url);
    } catch {
      return Promise.resolve(finish(null, 'the webhook url is not a valid URL'));
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.config.webhookAllowPrivateUrls)) {
      return Promise.resolve(finish(null, 'the webhook url must use https'));
    }
    // An address literal is never looked up, so the policy is applied to it here.
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    const refused = !this.config.webhookAllowPrivateUrls && isIP(literal) ? refusedConnection(literal, literal) : null;
    if (refused) return Promise.resolve(finish(null, refused.message));
    const body = Buffer.from(delivery.body, 'utf8');
    // Each attempt is signed at its own time: Standard Webhooks receivers refuse timestamps over 5 minutes old.
    const signed = signAttempt(delivery.secrets, delivery.eventId, Math.floor(startedAt.getTime() / 1000), body);
    return new Promise((resolve) => {
      let settled = false;
      const settle = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const transport = url.protocol === 'https:' ? https : http;
      const request = transport.request(url, {
        method: 'POST',
        agent: url.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(body.length),
          'X-Service-Signature': signed['X-Service-Signature'],
          'X-Service-Event': delivery.event,
          'X-Service-Webhook-ID': delivery.webhookId,
          'X-Service-Delivery-ID': delivery.deliveryId,
          'User-Agent': USER_AGENT,
          'webhook-id': signed['webhook-id'],
          'webhook-timestamp': signed['webhook-timestamp'],
          'webhook-signature': signed['webhook-signature'],
        },
      });
      const timer = setTimeout(() => {
        request.destroy(new Error(`no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`));
      }, DELIVERY_TIMEOUT_MS);
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        // The status line is the answer: a body that streams on (or is huge) must not turn a 200 into a timeout and
        // retries. The body is not used; one that ends soon and small is drained so the connection can be reused.
        settle(finish(status, describeStatus(status, response.headers.location)));
        let bytes = 0;
        const drop = setTimeout(() => request.destroy(), ANSWER_DRAIN_MS);
        response.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > MAX_ANSWER_DRAINED_BYTES) request.destroy();
        });
        response.on('close', () => clearTimeout(drop));
        response.on('error', () => undefined);
      });
      request.on('error', (error) => settle(finish(null, error.message.slice(0, 480))));
      request.end(body);
    });
  }
}

function describeStatus(status: number, location: string | undefined): string | null {
  if (status >= 200 && status < 300) return null;
  if (status >= 300 && status < 400) return `receiver answered ${status}; redirects are not followed${location ? ` (Location: ${location.slice(0, 300)})` : ''}`;
  return `receiver answered ${status}`;
}
