import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppConfig } from '../../../config/app-config.js';
import { WebhookSender } from './webhook-sender.js';
import { sign, standardSignature, standardWebhooksKey } from './webhook-signature.js';

describe('webhook sender', () => {
  let server: Server;
  let port: number;
  const hits: string[] = [];
  const headersSeen: Array<Record<string, string | string[] | undefined>> = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      hits.push(request.url ?? '');
      headersSeen.push(request.headers);
      if (request.url === '/redirect') response.writeHead(302, { Location: 'http://127.0.0.1/elsewhere' }).end();
      else if (request.url === '/flood') flood(response);
      else response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** An answer of 200 whose body never ends, written as fast as the connection takes it. */
  let floodedBytes = 0;
  let floodClosed: Promise<void> = Promise.resolve();
  function flood(response: ServerResponse): void {
    response.writeHead(200);
    const chunk = Buffer.alloc(64 * 1024, 120);
    const write = () => {
      while (!response.destroyed && response.write(chunk)) floodedBytes += chunk.length;
      if (!response.destroyed) response.once('drain', write);
    };
    floodClosed = new Promise((resolve) => response.on('close', resolve));
    write();
  }

  const delivery = (url: string) => ({ url, secrets: ['s'], deliveryId: 'dlv_1', eventId: 'evt_1', webhookId: 'wh_1', event: 'file.uploaded', body: '{}' });
  const sender = (allowPrivate: boolean) => new WebhookSender({ webhookAllowPrivateUrls: allowPrivate } as AppConfig);

  it('refuses at connect time to reach a private address, by IP literal or by a name that resolves to one', async () => {
    const strict = sender(false);
    try {
      const loopbackForms = ['[::1]', '[::127.0.0.1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[64:ff9b::7f00:1]', '[64:ff9b:1::7f00:1]', '[2002:7f00:1::1]'];
      for (const url of [`https://127.0.0.1:${port}/x`, `https://localhost:${port}/x`, ...loopbackForms.map((host) => `https://${host}:${port}/x`)]) {
        const result = await strict.send(delivery(url));
        expect(result.responseStatus).toBeNull();
        expect(result.error).toMatch(/not allowed/);
      }
      expect((await strict.send(delivery(`http://93.184.216.34/x`))).error).toBe('the webhook url must use https');
      expect(hits).toEqual([]);
    } finally {
      strict.onApplicationShutdown();
    }
  });

  it('posts when private addresses are allowed, and does not follow redirects', async () => {
    const lenient = sender(true);
    try {
      expect(await lenient.send(delivery(`http://127.0.0.1:${port}/ok`))).toMatchObject({ responseStatus: 204, error: null });
      const redirected = await lenient.send(delivery(`http://127.0.0.1:${port}/redirect`));
      expect(redirected.responseStatus).toBe(302);
      expect(redirected.error).toMatch(/redirects are not followed/);
      expect(hits.filter((hit) => hit !== '/signed')).toEqual(['/ok', '/redirect']);
    } finally {
      lenient.onApplicationShutdown();
    }
  });

  it('signs each attempt: X-Service-Signature with the newest secret, one Standard Webhooks signature per secret', async () => {
    const lenient = sender(true);
    try {
      const before = Math.floor(Date.now() / 1000);
      const body = '{"event":"file.uploaded"}';
      await lenient.send({ ...delivery(`http://127.0.0.1:${port}/signed`), secrets: ['whsec_new', 'whsec_old'], eventId: 'evt_42', body });
      const headers = headersSeen[hits.indexOf('/signed')];
      const timestamp = Number(headers['webhook-timestamp']);
      expect(timestamp).toBeGreaterThanOrEqual(before);
      expect(headers).toMatchObject({
        'webhook-id': 'evt_42',
        'x-service-delivery-id': 'dlv_1',
        'x-service-signature': sign('whsec_new', body),
        'webhook-signature': [
          standardSignature(standardWebhooksKey('whsec_new'), 'evt_42', timestamp, body),
          standardSignature(standardWebhooksKey('whsec_old'), 'evt_42', timestamp, body),
        ].join(' '),
      });
    } finally {
      lenient.onApplicationShutdown();
    }
  });

  it('takes the status line as the answer and drops a connection whose body goes on and on', async () => {
    const lenient = sender(true);
    try {
      const result = await lenient.send(delivery(`http://127.0.0.1:${port}/flood`));
      expect(result).toMatchObject({ responseStatus: 200, error: null });
      await Promise.race([floodClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('the flooding answer was not cut off')), 5_000))]);
      expect(floodedBytes).toBeLessThan(64 * 1024 * 1024);
    } finally {
      lenient.onApplicationShutdown();
    }
  });

  it('reports a refused connection as an error without a status', async () => {
    const lenient = sender(true);
    try {
      const result = await lenient.send(delivery('http://127.0.0.1:1/x'));
      expect(result).toMatchObject({ responseStatus: null, error: expect.stringContaining('ECONNREFUSED') });
    } finally {
      lenient.onApplicationShutdown();
    }
  });
});
