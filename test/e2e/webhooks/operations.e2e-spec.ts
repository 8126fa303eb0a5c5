import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILED_LOGINS_PER_MINUTE } from '../../../src/infra/queue/queue-dashboard.module.js';
import { ALL_QUEUES } from '../../../src/infra/queue/queue-names.js';
import { createAccount } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { recordEvent, startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const ADMIN = { username: 'ops', password: 'correct horse battery' };

describe('operations: queue dashboard and metrics', () => {
  let t: TestApp;
  let browser: Browser;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    t = await startTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
    receiver = await startWebhookReceiver();
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await receiver.close();
    await t.close();
  });

  it('shows every queue on the dashboard to the admin in a real browser', async () => {
    const context = await browser.newContext({ httpCredentials: ADMIN });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${t.baseUrl}/admin/queues`);
      expect(response?.status()).toBe(200);
      for (const queue of ALL_QUEUES) await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 15_000 });
      expect(await page.title()).toContain('File storage queues');
      // The dashboard's own page may change the queues: the browser's headers (Sec-Fetch-Site, Origin) say same origin.
      const statuses = await page.evaluate(async () => {
        const answered: number[] = [];
        for (const action of ['pause', 'resume']) answered.push((await fetch(`/admin/queues/api/queues/webhook-replays/${action}`, { method: 'PUT' })).status);
        return answered;
      });
      expect(statuses).toEqual([200, 200]);

      // A page of another site, in the same browser, posting a form to the dashboard: the browser sends the saved credentials.
      const jobs = async () => {
        const answer = await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, ADMIN.password).expect(200);
        const counts = (answer.body.queues as { name: string; counts: Record<string, number> }[]).find((q) => q.name === 'webhook-replays')!.counts;
        return Object.values(counts).reduce((sum, n) => sum + n, 0);
      };
      const before = await jobs();
      const forged = page.waitForResponse((response) => response.url().endsWith('/add'));
      await page.goto('about:blank');
      await page.setContent(`<form method="post" action="${t.baseUrl}/admin/queues/api/queues/webhook-replays/add"><input name="name" value="forged"></form>`);
      await page.evaluate('document.forms[0].submit()');
      expect((await forged).status()).toBe(403);
      expect(await jobs()).toBe(before);
    } finally {
      await context.close();
    }
  });

  it('refuses the dashboard without or with wrong credentials', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const statuses: number[] = [];
      page.on('response', (response) => statuses.push(response.status()));
      // Chromium answers a 401 with a Basic challenge it has no credentials for by failing the navigation.
      const navigation = await page.goto(`${t.baseUrl}/admin/queues`).then(
        (response) => response?.status(),
        (error: Error) => error.message,
      );
      expect(String(navigation)).toMatch(/401|ERR_INVALID_AUTH_CREDENTIALS/);
      expect(statuses).toContain(401);
      expect(await page.getByText(ALL_QUEUES[0], { exact: true }).count()).toBe(0);
    } finally {
      await context.close();
    }
    const wrong = await t.http().get('/admin/queues').auth(ADMIN.username, 'wrong password').expect(401);
    expect(wrong.headers['www-authenticate']).toMatch(/^Basic /);
    expect(wrong.body).toMatchObject({ success: false, error: { code: 'authentication_failed' } });
    await t.http().get('/admin/queues/api/queues').expect(401);
    await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, ADMIN.password).expect(200);
    // The scheme in any case, as RFC 9110 allows it; the credentials themselves are exact.
    const credentials = Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64');
    await t.http().get('/admin/queues/api/queues').set('Authorization', `basic ${credentials}`).expect(200);
    await t.http().get('/admin/queues/api/queues').set('Authorization', `BASIC ${credentials}`).expect(200);
    await t.http().get('/admin/queues/api/queues').set('Authorization', `Basic ${Buffer.from(`${ADMIN.username.toUpperCase()}:${ADMIN.password}`).toString('base64')}`).expect(401);
  });

  it("refuses a change another site's page sends with the admin's credentials, and takes it from the dashboard's own page or a script", async () => {
    const jobsIn = async (queue: string) => {
      const answer = await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, ADMIN.password).expect(200);
      const counts = (answer.body.queues as { name: string; counts: Record<string, number> }[]).find((q) => q.name === queue)!.counts;
      return Object.values(counts).reduce((sum, n) => sum + n, 0);
    };
    const isPaused = async (queue: string) => {
      const answer = await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, ADMIN.password).expect(200);
      return (answer.body.queues as { name: string; isPaused: boolean }[]).find((q) => q.name === queue)!.isPaused;
    };
    const before = await jobsIn('webhook-replays');
    // What a browser sends when a page of another site posts a form to the dashboard: the cached basic auth comes along.
    const forged = await t
      .http()
      .post('/admin/queues/api/queues/webhook-replays/add')
      .auth(ADMIN.username, ADMIN.password)
      .set({ 'Sec-Fetch-Site': 'cross-site', Origin: 'https://evil.example' })
      .type('form')
      .send('name=forged')
      .expect(403);
    expect(forged.body).toEqual({ success: false, error: { code: 'permission_denied', message: expect.stringContaining('another site') } });
    // Over plain HTTP a browser sends no Sec-Fetch-Site; its Origin names the other site, or "null".
    for (const origin of ['http://evil.example', 'null']) {
      await t.http().put('/admin/queues/api/queues/webhook-replays/pause').auth(ADMIN.username, ADMIN.password).set('Origin', origin).expect(403);
    }
    await t.http().post('/admin/queues/api/queues/webhook-replays/add').auth(ADMIN.username, ADMIN.password).set('Sec-Fetch-Site', 'same-site').send({ name: 'x' }).expect(403);
    expect(await jobsIn('webhook-replays')).toBe(before);
    expect(await isPaused('webhook-replays')).toBe(false);

    // The dashboard's own page (same origin, with or without Sec-Fetch-Site), and a script sending neither header.
    await t.http().put('/admin/queues/api/queues/webhook-replays/pause').auth(ADMIN.username, ADMIN.password).set('Sec-Fetch-Site', 'same-origin').expect(200);
    expect(await isPaused('webhook-replays')).toBe(true);
    await t.http().put('/admin/queues/api/queues/webhook-replays/resume').auth(ADMIN.username, ADMIN.password).set('Origin', t.baseUrl).expect(200);
    expect(await isPaused('webhook-replays')).toBe(false);
    await t.http().put('/admin/queues/api/queues/webhook-replays/pause').auth(ADMIN.username, ADMIN.password).expect(200);
    await t.http().put('/admin/queues/api/queues/webhook-replays/resume').auth(ADMIN.username, ADMIN.password).expect(200);
    expect(await isPaused('webhook-replays')).toBe(false);
  });

  it("is not shown inside another site's page, even to a browser holding the credentials, and its answers are not cached", async () => {
    const context = await browser.newContext({ httpCredentials: ADMIN });
    try {
      const page = await context.newPage();
      // Another site's page framing the dashboard, to lay buttons of its own over "Clean" or "Retry" (clickjacking).
      await page.setContent(`<iframe src="${t.baseUrl}/admin/queues" width="1200" height="800"></iframe>`, { waitUntil: 'load' });
      const frame = page.frames().find((f) => f !== page.mainFrame())!;
      expect(frame.url()).not.toBe(`${t.baseUrl}/admin/queues`);
      expect(await frame.getByText(ALL_QUEUES[0], { exact: true }).count()).toBe(0);
    } finally {
      await context.close();
    }
    const html = await t.http().get('/admin/queues').auth(ADMIN.username, ADMIN.password).expect(200);
    const api = await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, ADMIN.password).expect(200);
    for (const answer of [html, api]) {
      expect(answer.headers['x-frame-options']).toBe('DENY');
      expect(answer.headers['content-security-policy']).toBe("frame-ancestors 'none'");
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['x-powered-by']).toBeUndefined();
    }
    // Bull Board's public scripts and styles may be cached as express.static has them.
    const stylesheet = /href="(static\/css\/[^"]+\.css)"/.exec(html.text)![1];
    const asset = await t.http().get(`/admin/queues/${stylesheet}`).auth(ADMIN.username, ADMIN.password).expect(200);
    expect(asset.headers['cache-control']).not.toContain('no-store');
  });

  it('exposes Prometheus metrics: request durations, queue depths, deliveries by outcome, outbox backlog', async () => {
    const owner = await createAccount(t.app);
    await t.http().post('/v1/webhooks').set(owner.auth).send({ url: receiver.url, events: ['folder.created'] }).expect(201);
    await recordEvent(t.app, 'folder.created', owner.accountId, { folder: { id: 'fld_1', name: 'Docs', parent_id: null, created_by: owner.userId } });
    await receiver.waitFor((r) => r.length === 1);
    await t.http().get('/v1/webhooks').set(owner.auth).expect(200);

    let text = '';
    // The outcome is counted once the attempt is recorded, a moment after the receiver answered.
    const settled = () => text.includes('webhook_deliveries_total{outcome="succeeded"} 1') && /queue_jobs\{queue="webhook-deliveries",state="delayed"\} 0/.test(text);
    for (let i = 0; i < 50 && !settled(); i++) {
      const scraped = await t.http().get('/metrics').expect(200);
      expect(scraped.headers['content-type']).toMatch(/^text\/plain/);
      text = scraped.text;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(text).toContain('webhook_deliveries_total{outcome="succeeded"} 1');
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/v1\/webhooks",status_code="200"\} [1-9]/);
    expect(text).toMatch(/http_request_duration_seconds_count\{method="POST",route="\/v1\/webhooks",status_code="201"\} 1/);
    for (const queue of ALL_QUEUES) expect(text).toContain(`queue_jobs{queue="${queue}",state="waiting"}`);
    // The first attempt went out straight after the relay, without a job: none is left waiting.
    expect(text).toContain('queue_jobs{queue="webhook-deliveries",state="completed"}');
    expect(text).toMatch(/queue_jobs\{queue="webhook-deliveries",state="delayed"\} 0/);
    expect(text).toContain('webhook_outbox_backlog{stage="outbox"} 0');
    expect(text).toContain('webhook_outbox_backlog{stage="unqueued"} 0');
    expect(text).toContain('webhook_delivery_attempt_duration_seconds_count 1');
  });
});

describe('the queue dashboard against password guessing', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password });
  });
  afterAll(() => t.close());

  it(`refuses every attempt from an address for the rest of the minute after ${FAILED_LOGINS_PER_MINUTE} wrong passwords, the right one included`, async () => {
    // Visits without credentials are how a browser learns to ask for them: they do not count.
    for (let i = 0; i < 3; i++) await t.http().get('/admin/queues/api/queues').expect(401);
    for (let i = 0; i < FAILED_LOGINS_PER_MINUTE; i++) await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, `guess ${i}`).expect(401);

    const refused = await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, 'guess 11').expect(429);
    expect(refused.body).toEqual({ success: false, error: { code: 'rate_limit_exceeded', message: expect.stringContaining('try again') } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    await t.http().get('/admin/queues/api/queues').auth(ADMIN.username, ADMIN.password).expect(429);
  });
});

describe('the queue dashboard against password guessing from many IPv6 addresses', () => {
  let t: TestApp;

  beforeAll(async () => {
    // Behind a proxy that names the client in X-Forwarded-For, as the addresses below need.
    t = await startTestApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, TRUST_PROXY: 'true' });
  });
  afterAll(() => t.close());

  it('counts the wrong passwords of a whole IPv6 /64 together, as a subscriber holds every address in it', async () => {
    const from = (n: number) => `2001:db8:7:9::${(n + 1).toString(16)}`;
    for (let i = 0; i < FAILED_LOGINS_PER_MINUTE; i++) {
      await t.http().get('/admin/queues/api/queues').set('X-Forwarded-For', from(i)).auth(ADMIN.username, `guess ${i}`).expect(401);
    }
    await t.http().get('/admin/queues/api/queues').set('X-Forwarded-For', from(100)).auth(ADMIN.username, 'guess 100').expect(429);
    await t.http().get('/admin/queues/api/queues').set('X-Forwarded-For', from(101)).auth(ADMIN.username, ADMIN.password).expect(429);
    // Another network is not held back by it.
    await t.http().get('/admin/queues/api/queues').set('X-Forwarded-For', '2001:db8:7:a::1').auth(ADMIN.username, ADMIN.password).expect(200);
  });

  it("takes a change from the dashboard's own page served through the proxy, which names the public host in X-Forwarded-Host", async () => {
    const viaProxy = { 'X-Forwarded-For': '192.0.2.10', 'X-Forwarded-Host': 'files.example.com', Origin: 'http://files.example.com' };
    await t.http().put('/admin/queues/api/queues/webhook-replays/pause').set(viaProxy).auth(ADMIN.username, ADMIN.password).expect(200);
    await t.http().put('/admin/queues/api/queues/webhook-replays/resume').set(viaProxy).auth(ADMIN.username, ADMIN.password).expect(200);
    await t
      .http()
      .put('/admin/queues/api/queues/webhook-replays/pause')
      .set({ ...viaProxy, Origin: 'http://evil.example' })
      .auth(ADMIN.username, ADMIN.password)
      .expect(403);
  });
});

describe('operations without an admin configured', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('does not serve the dashboard at all', async () => {
    const answer = await t.http().get('/admin/queues').expect(404);
    expect(answer.body.error.code).toBe('not_found');
  });
});
