import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppConfig } from '../../../config/app-config.js';
import { WebhookSender } from './webhook-sender.js';

describe('webhook sender', () => {
  let server: Server;
  let port: number;
  const hits: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      hits.push(request.url ?? '');
      if (request.url === '/redirect') response.writeHead(302, { Location: 'http://127.0.0.1/elsewhere' }).end();
      else response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const delivery = (url: string) => ({ url, secret: 's', deliveryId: 'dlv_1', webhookId: 'wh_1', event: 'file.uploaded', body: '{}' });
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
      expect(hits).toEqual(['/ok', '/redirect']);
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
