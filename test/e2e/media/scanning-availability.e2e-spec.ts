import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppConfig, DEBIAN_CLAMD_SOCKET } from '../../../src/config/app-config.js';
import { createAccount } from '../../support/accounts.js';
import { eicar } from '../../support/media.js';
import { startServerProcess } from '../../support/processes.js';
import { createTestEnvironment, startTestApp, type TestApp } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { uploadOk } from '../../support/uploads.js';
import { type Clamd, reload, startClamd } from './media-support.js';

/** The server as started with no CLAMAV_* variable, except that "Debian's default socket" is `socket`. */
function startWithDefaultSocket(socket: string): Promise<TestApp> {
  return startTestApp({}, (loaded) => {
    expect(loaded.clamav.configured).toBe(false);
    return new AppConfig({ ...loaded, clamav: { ...loaded.clamav, socket } });
  });
}

/** The file's scan status once it is no longer pending (read from its row: an infected file is hidden from the API). */
function settledScanStatus(t: TestApp, id: string): Promise<string> {
  return eventually(async () => {
    const status = (await reload(t.app, id))?.scanStatus;
    return status === 'pending' ? null : status;
  }, 20_000, 'the scan verdict');
}

describe('virus scanning without configuration', () => {
  let clamd: Clamd;

  beforeAll(async () => {
    clamd = await startClamd();
  });
  afterAll(() => clamd?.stop());

  it("uses a clamd listening at Debian's default socket: uploads are scanned and scanning is reported active", async () => {
    const t = await startWithDefaultSocket(clamd.socket);
    try {
      const account = await createAccount(t.app);
      const info = await t.http().get('/v1/user/info').set(account.auth).expect(200);
      expect(info.body.data.scanning).toBe('active');
      const health = await t.http().get('/health').expect(200);
      expect(health.body.data.info.media.virus_scanner).toMatchObject({ scanning: 'active', configured: true, reachable: true, address: `unix:${clamd.socket}` });

      const infected = await uploadOk(t, account.auth, eicar(), { name: 'eicar.txt' });
      expect(await settledScanStatus(t, infected.id)).toBe('infected');
    } finally {
      await t.close();
    }
  });

  it('says loudly when nothing listens there: user info and /health report scanning unavailable, and uploads are marked skipped', async () => {
    const t = await startWithDefaultSocket(`${clamd.socket}.missing`);
    try {
      const account = await createAccount(t.app);
      const info = await t.http().get('/v1/user/info').set(account.auth).expect(200);
      expect(info.body.data.scanning).toBe('unavailable');
      const health = await t.http().get('/health').expect(200);
      expect(health.body.data.info.media).toMatchObject({ degraded: true, virus_scanner: { scanning: 'unavailable', configured: false, reachable: false, error: expect.stringContaining('.missing') } });

      const file = await uploadOk(t, account.auth, eicar(), { name: 'eicar.txt' });
      expect(await settledScanStatus(t, file.id)).toBe('skipped');
    } finally {
      await t.close();
    }
  });

  it('reports scanning unavailable while a configured clamd is down', async () => {
    const t = await startTestApp({ CLAMAV_SOCKET: `${clamd.socket}.down` });
    try {
      const account = await createAccount(t.app);
      const info = await t.http().get('/v1/user/info').set(account.auth).expect(200);
      expect(info.body.data.scanning).toBe('unavailable');
      const health = await t.http().get('/health').expect(200);
      expect(health.body.data.info.media.virus_scanner).toMatchObject({ scanning: 'unavailable', configured: true, reachable: false });
    } finally {
      await t.close();
    }
  });

  it('warns at start-up, in the log, that uploads are not scanned', async () => {
    // The server process really looks at Debian's socket; on a machine running clamav-daemon there is nothing to warn about.
    expect(existsSync(DEBIAN_CLAMD_SOCKET), `this test needs no clamd at ${DEBIAN_CLAMD_SOCKET}`).toBe(false);
    const environment = await createTestEnvironment({ LOG_LEVEL: 'warn' });
    try {
      const server = await startServerProcess(environment.env);
      try {
        await eventually(async () => server.output().includes('VIRUS SCANNING IS OFF'), 20_000, 'the start-up warning');
        expect(server.output()).toContain(DEBIAN_CLAMD_SOCKET);
      } finally {
        await server.stop();
      }
    } finally {
      await environment.dispose();
    }
  });
});
