import { randomBytes } from 'node:crypto';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import { GetFileMediaQuery } from '../../../src/modules/media/queries/get-file-media.query.js';
import { mediaJobId } from '../../../src/modules/media/media-jobs.js';
import { ScheduleMediaWorkCommand } from '../../../src/modules/media/commands/schedule-media-work.command.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { scanSettled, seedFile } from '../../support/files.js';
import { eicar, pngImage } from '../../support/media.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { type Clamd, queued, overwrite, publishStored, reload, scansQueue, settledJob, startClamd, thumbnailBlobs, thumbnailsQueue } from './media-support.js';
import { eventually } from '../../support/time.js';
import { freePort } from '../../support/processes.js';
import { onTestServer, uploadOk } from '../../support/uploads.js';
import { createShare } from '../shares/share-fixtures.js';
import { startHoldableProxy } from '../../support/holdable-proxy.js';

describe('virus scanning with a real clamd', () => {
  let clamd: Clamd;
  let t: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    clamd = await startClamd();
    t = await startTestApp({ CLAMAV_HOST: clamd.host, CLAMAV_PORT: String(clamd.port), MEDIA_RETRY_DELAY_MS: '100' });
    account = await createAccount(t.app);
  });
  afterAll(async () => {
    await t?.close();
    await clamd?.stop();
  });

  const media = (fileId: string) => t.app.get(QueryBus).execute(new GetFileMediaQuery(fileId));

  it('quarantines the EICAR test file: scan_status infected, the threat named, still counted in storage', async () => {
    const file = await seedFile(t.app, account, { name: 'eicar.com.txt', content: eicar() });
    const usedBefore = (await t.app.get(DataSource).getRepository(AccountEntity).findOneByOrFail({ id: account.accountId })).storageUsed;
    publishStored(t.app, file);

    const job = await settledJob(scansQueue(t.app), 'scan', file);
    expect(job.returnvalue).toMatchObject({ outcome: 'recorded', scanStatus: 'infected' });
    expect((await reload(t.app, file.id))!.scanStatus).toBe('infected');
    expect(await media(file.id)).toMatchObject({ scanStatus: 'infected', scanThreat: expect.stringMatching(/^Eicar-Test-Signature/) });
    const usedAfter = (await t.app.get(DataSource).getRepository(AccountEntity).findOneByOrFail({ id: account.accountId })).storageUsed;
    expect(usedAfter).toBe(usedBefore);
  });

  it('quarantines an EICAR file uploaded through the API: it leaves the listing and GET answers 404', async () => {
    const uploaded = await uploadOk(t, account.auth, eicar(), { name: 'uploaded-eicar.com.txt' });
    expect(uploaded.scan_status).toBe('pending');
    await eventually(async () => (await reload(t.app, uploaded.id))!.scanStatus === 'infected', 30_000, 'the scan to find the virus');
    expect(await media(uploaded.id)).toMatchObject({ scanStatus: 'infected', scanThreat: expect.stringMatching(/^Eicar-Test-Signature/) });
    expect((await t.http().get(`/v1/files/${uploaded.id}`).set(account.auth)).status).toBe(404);
    const listed = (await t.http().get('/v1/files?per_page=100').set(account.auth)).body.data.map((f: { id: string }) => f.id);
    expect(listed).not.toContain(uploaded.id);
  });

  it('marks an ordinary file clean', async () => {
    const file = await seedFile(t.app, account, { content: randomBytes(300_000) , mimeType: 'application/octet-stream', category: 'other' });
    publishStored(t.app, file);
    await settledJob(scansQueue(t.app), 'scan', file);
    expect(await media(file.id)).toMatchObject({ scanStatus: 'clean', scanThreat: null, scannedAt: expect.any(Date) });
  });

  it('marks a file larger than clamd accepts (StreamMaxLength) skipped, saying why', async () => {
    const file = await seedFile(t.app, account, { content: randomBytes(3 * 1024 * 1024), mimeType: 'application/octet-stream', category: 'other' });
    publishStored(t.app, file);
    await settledJob(scansQueue(t.app), 'scan', file);
    expect(await media(file.id)).toMatchObject({ scanStatus: 'skipped', scanNote: expect.stringMatching(/StreamMaxLength/) });
  });

  it('scans a file again when clamd cuts its stream once (a restart), so a virus behind the cut is still found', async () => {
    const proxy = await startHoldableProxy(clamd.port);
    const viaProxy = await startTestApp({ CLAMAV_HOST: '127.0.0.1', CLAMAV_PORT: String(proxy.port), MEDIA_RETRY_DELAY_MS: '100' });
    try {
      const other = await createAccount(viaProxy.app);
      // Under clamd's 1 MiB limit, the virus after the first 100 KB, where the cut falls.
      const file = await seedFile(viaProxy.app, other, { content: Buffer.concat([randomBytes(300_000), eicar()]) });
      proxy.cutOnceAfter(100_000);
      publishStored(viaProxy.app, file);
      const job = await settledJob(scansQueue(viaProxy.app), 'scan', file);
      expect(proxy.cuts).toBe(1);
      expect(job.returnvalue).toMatchObject({ outcome: 'recorded', scanStatus: 'infected' });
      expect(job.attemptsMade).toBe(2);
      expect((await reload(viaProxy.app, file.id))!.scanStatus).toBe('infected');
    } finally {
      await viaProxy.close();
      await proxy.close();
    }
  });

  it('scans over clamd\'s UNIX socket too', async () => {
    const viaSocket = await startTestApp({ CLAMAV_SOCKET: clamd.socket });
    try {
      const other = await createAccount(viaSocket.app);
      const infected = await seedFile(viaSocket.app, other, { content: Buffer.concat([Buffer.from('prefix '), eicar()]) });
      const clean = await seedFile(viaSocket.app, other, { content: 'nothing to see here' });
      publishStored(viaSocket.app, infected);
      publishStored(viaSocket.app, clean);
      await settledJob(scansQueue(viaSocket.app), 'scan', infected);
      await settledJob(scansQueue(viaSocket.app), 'scan', clean);
      expect((await reload(viaSocket.app, infected.id))!.scanStatus).toBe('infected');
      expect((await reload(viaSocket.app, clean.id))!.scanStatus).toBe('clean');
      const health = await viaSocket.http().get('/health');
      expect(health.body.data.info.media.virus_scanner).toMatchObject({ configured: true, reachable: true, address: `unix:${clamd.socket}` });
    } finally {
      await viaSocket.close();
    }
  });

  it('re-publishing the same upload scans it once (one job per stored version)', async () => {
    const file = await seedFile(t.app, account, { content: 'twice' });
    publishStored(t.app, file);
    publishStored(t.app, file);
    const job = await settledJob(scansQueue(t.app), 'scan', file);
    expect(job.attemptsMade).toBe(1);
    // What publishing it a third time does, awaited: the same version is not queued again.
    await t.app.get(CommandBus).execute(new ScheduleMediaWorkCommand(file.id, file.accountId, file.blobKey));
    const again = await settledJob(scansQueue(t.app), 'scan', file);
    expect(again.finishedOn).toBe(job.finishedOn);
    expect((await reload(t.app, file.id))!.scanStatus).toBe('clean');
  });

  it('discards a verdict on bytes the file no longer holds, and judges the new bytes', async () => {
    const queue = scansQueue(t.app);
    await queue.pause();
    try {
      const file = await seedFile(t.app, account, { content: eicar() });
      publishStored(t.app, file);
      await queued(queue, 1, 'the scan to be queued');
      const replaced = await overwrite(t.app, file, Buffer.from('harmless new content'), 'text/plain');
      await queue.resume();
      const stale = await settledJob(queue, 'scan', file);
      expect(stale.returnvalue).toMatchObject({ outcome: 'discarded' });
      expect((await reload(t.app, file.id))!.scanStatus).not.toBe('infected');

      publishStored(t.app, replaced);
      await settledJob(queue, 'scan', replaced);
      expect((await reload(t.app, file.id))!.scanStatus).toBe('clean');
    } finally {
      await queue.resume();
    }
  });

  it('an infected file overwritten with clean content is judged again and released from quarantine', async () => {
    const file = await seedFile(t.app, account, { content: eicar() });
    publishStored(t.app, file);
    await settledJob(scansQueue(t.app), 'scan', file);
    expect((await reload(t.app, file.id))!.scanStatus).toBe('infected');
    const replaced = await overwrite(t.app, file, Buffer.from('clean now'), 'text/plain');
    publishStored(t.app, replaced);
    await settledJob(scansQueue(t.app), 'scan', replaced);
    expect(await media(file.id)).toMatchObject({ scanStatus: 'clean', scanThreat: null });
  });

  it('an ordinary upload is scanned clean: GET shows scan_status clean and it downloads', async () => {
    const content = randomBytes(300_000);
    const uploaded = await uploadOk(t, account.auth, content, { name: 'ordinary.bin' });
    await scanSettled(t.app, uploaded.id, 30_000);
    const shown = await t.http().get(`/v1/files/${uploaded.id}`).set(account.auth).expect(200);
    expect(shown.body.data.scan_status).toBe('clean');
    const download = await fetch(onTestServer(t, shown.body.data.download_url));
    expect(download.status).toBe(200);
    expect(Buffer.compare(Buffer.from(await download.arrayBuffer()), content)).toBe(0);
  });

  it('an upload larger than clamd accepts shows scan_status skipped and stays listed', async () => {
    const uploaded = await uploadOk(t, account.auth, randomBytes(3 * 1024 * 1024), { name: 'too-big-to-scan.bin' });
    await scanSettled(t.app, uploaded.id, 30_000);
    const shown = await t.http().get(`/v1/files/${uploaded.id}`).set(account.auth).expect(200);
    expect(shown.body.data.scan_status).toBe('skipped');
    const listed = (await t.http().get('/v1/files?per_page=100').set(account.auth)).body.data.map((f: { id: string }) => f.id);
    expect(listed).toContain(uploaded.id);
  });

  it('an upload clamd only partly scans (over its MaxFileSize, with AlertExceedsMax) is shown skipped, not quarantined, and says why', async () => {
    // Within StreamMaxLength (1M) but over MaxFileSize: clamd reads it all and answers "OK" unscanned, or with
    // AlertExceedsMax "Heuristics.Limits.Exceeded.MaxFileSize FOUND", which is no virus either.
    const limited = await startClamd(undefined, ['MaxFileSize 256K', 'AlertExceedsMax yes']);
    const app = await startTestApp({ CLAMAV_HOST: limited.host, CLAMAV_PORT: String(limited.port) });
    try {
      const owner = await createAccount(app.app);
      const content = randomBytes(512 * 1024);
      const uploaded = await uploadOk(app, owner.auth, content, { name: 'over-max-file-size.bin' });
      await scanSettled(app.app, uploaded.id, 30_000);
      const shown = (await app.http().get(`/v1/files/${uploaded.id}`).set(owner.auth).expect(200)).body.data;
      expect(shown.scan_status).toBe('skipped');
      const recorded = await app.app.get(QueryBus).execute(new GetFileMediaQuery(uploaded.id));
      expect(recorded).toMatchObject({ scanThreat: null, scanNote: expect.stringMatching(/MaxFileSize/) });
      const listed = (await app.http().get('/v1/files?per_page=100').set(owner.auth)).body.data.map((f: { id: string }) => f.id);
      expect(listed).toContain(uploaded.id);
      const download = await fetch(onTestServer(app, shown.download_url));
      expect(download.status).toBe(200);
      expect(Buffer.compare(Buffer.from(await download.arrayBuffer()), content)).toBe(0);
    } finally {
      await app.close();
      await limited.stop();
    }
  });

  it('an image is thumbnailed only once the scan has judged it: an infected one is never decoded, a clean one after its verdict', async () => {
    const queue = scansQueue(t.app);
    const image = await pngImage(320, 240);
    await queue.pause();
    let infected: { id: string };
    let clean: { id: string };
    try {
      // A PNG with the EICAR string after its end: image/png to type detection, infected to clamd.
      infected = await uploadOk(t, account.auth, Buffer.concat([image, eicar()]), { name: 'infected.png' });
      clean = await uploadOk(t, account.auth, image, { name: 'clean.png' });
      await queued(queue, 2, 'both scans to be queued');
    } finally {
      await queue.resume();
    }
    const infectedFile = (await reload(t.app, infected.id))!;
    const cleanFile = (await reload(t.app, clean.id))!;
    const infectedScan = await settledJob(queue, 'scan', infectedFile);
    const cleanScan = await settledJob(queue, 'scan', cleanFile);
    expect(infectedScan.returnvalue).toMatchObject({ scanStatus: 'infected' });
    expect(cleanScan.returnvalue).toMatchObject({ scanStatus: 'clean' });

    // After the verdict was recorded (scanned_at), which is what queues the job; the scan job itself is marked finished
    // a moment later, so its finishedOn may come after the thumbnail job has started.
    const refused = await settledJob(thumbnailsQueue(t.app), 'thumbnail', infectedFile);
    expect(refused.processedOn).toBeGreaterThanOrEqual((await media(infected.id))!.scannedAt!.getTime());
    expect(await media(infected.id)).toMatchObject({ thumbnailStatus: 'none', thumbnailError: expect.stringMatching(/quarantined/) });
    expect(await thumbnailBlobs(t.app, infectedFile)).toEqual([]);

    const made = await settledJob(thumbnailsQueue(t.app), 'thumbnail', cleanFile);
    expect(made.processedOn).toBeGreaterThanOrEqual((await media(clean.id))!.scannedAt!.getTime());
    expect(made.returnvalue).toMatchObject({ outcome: 'created' });
    const shown = await t.http().get(`/v1/files/${clean.id}`).set(account.auth).expect(200);
    expect(shown.body.data.thumbnail_url).toEqual(expect.any(String));
  });

  it('an infected upload cannot be downloaded or shared, and a link made before the verdict refuses the download', async () => {
    const queue = scansQueue(t.app);
    await queue.pause();
    let uploaded: { id: string; download_url: string };
    let share: Awaited<ReturnType<typeof createShare>>;
    try {
      uploaded = await uploadOk(t, account.auth, eicar(), { name: 'shared-before-the-scan.txt' });
      share = await createShare(t, account, { file_id: uploaded.id });
    } finally {
      await queue.resume();
    }
    await eventually(async () => (await reload(t.app, uploaded.id))!.scanStatus === 'infected', 30_000, 'the scan to find the virus');
    const download = await fetch(onTestServer(t, uploaded.download_url));
    expect(download.status).toBe(403);
    expect(((await download.json()) as { error: { code: string } }).error.code).toBe('file_infected');
    const viaLink = await t.http().get(`${share.path}/download`);
    expect(viaLink.status).toBe(403);
    expect(viaLink.body.error.code).toBe('file_infected');
    const newLink = await t.http().post('/v1/shares').set(account.auth).send({ file_id: uploaded.id });
    expect(newLink.status).toBe(403);
    expect(newLink.body.error.code).toBe('file_infected');
  });

  it('an infected upload overwritten through the upload route with clean content is released: listed, shown clean, downloadable', async () => {
    const infected = await uploadOk(t, account.auth, eicar(), { name: 'quarantined-then-fixed.txt' });
    await eventually(async () => (await reload(t.app, infected.id))!.scanStatus === 'infected', 30_000, 'the scan to find the virus');
    const replaced = await uploadOk(t, account.auth, 'clean now', { name: 'quarantined-then-fixed.txt', overwrite: true });
    expect(replaced.id).toBe(infected.id);
    await scanSettled(t.app, infected.id, 30_000);
    const shown = await t.http().get(`/v1/files/${infected.id}`).set(account.auth).expect(200);
    expect(shown.body.data.scan_status).toBe('clean');
    const listed = (await t.http().get('/v1/files?per_page=100').set(account.auth)).body.data.map((f: { id: string }) => f.id);
    expect(listed).toContain(infected.id);
    const download = await fetch(onTestServer(t, shown.body.data.download_url));
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('clean now');
  });

  it('retries with backoff while clamd is unreachable, and scans once it is back', async () => {
    const port = await freePort();
    const waiting = await startTestApp({ CLAMAV_HOST: '127.0.0.1', CLAMAV_PORT: String(port), MEDIA_RETRY_DELAY_MS: '100' });
    let late: Clamd | undefined;
    try {
      const other = await createAccount(waiting.app);
      const file = await seedFile(waiting.app, other, { content: eicar() });
      publishStored(waiting.app, file);
      const { mediaJobId } = await import('../../../src/modules/media/media-jobs.js');
      const queue = scansQueue(waiting.app);
      await eventually(async () => ((await queue.getJob(mediaJobId('scan', file.id, file.blobKey)))?.attemptsMade ?? 0) >= 2, 10_000, 'two failed attempts');
      expect((await reload(waiting.app, file.id))!.scanStatus).toBe('pending');
      const health = await waiting.http().get('/health');
      expect(health.status).toBe(200);
      expect(health.body.data.info.media).toMatchObject({ status: 'up', degraded: true, virus_scanner: { configured: true, reachable: false } });

      late = await startClamd(port);
      const job = await settledJob(queue, 'scan', file, 30_000);
      expect(job.attemptsMade).toBeGreaterThan(2);
      expect((await reload(waiting.app, file.id))!.scanStatus).toBe('infected');
    } finally {
      await waiting.close();
      await late?.stop();
    }
  });
});

describe('without a virus scanner', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it('marks files skipped, and the job says why', async () => {
    const account = await createAccount(t.app);
    const file = await seedFile(t.app, account, { content: eicar() });
    publishStored(t.app, file);
    const job = await settledJob(scansQueue(t.app), 'scan', file);
    expect(job.returnvalue).toMatchObject({ outcome: 'recorded', scanStatus: 'skipped', note: expect.stringMatching(/no virus scanner is configured/) });
    expect((await reload(t.app, file.id))!.scanStatus).toBe('skipped');
  });

  it('marks an upload skipped, saying why, with its media row: no scan job is queued to open nothing', async () => {
    const account = await createAccount(t.app);
    const uploaded = await uploadOk(t, account.auth, eicar(), { name: 'unscanned.txt' });
    const file = await scanSettled(t.app, uploaded.id);
    expect(file.scanStatus).toBe('skipped');
    const media = await t.app.get(QueryBus).execute(new GetFileMediaQuery(uploaded.id));
    expect(media).toMatchObject({ scanStatus: 'skipped', scanNote: expect.stringMatching(/no virus scanner is configured/), scannedAt: expect.any(Date) });
    expect(await scansQueue(t.app).getJob(mediaJobId('scan', uploaded.id, file.blobKey))).toBeFalsy();
  });

  it('reports the missing scanner in /health without failing it', async () => {
    const res = await t.http().get('/health');
    expect(res.status).toBe(200);
    expect(res.body.data.info.media).toMatchObject({ status: 'up', degraded: true, virus_scanner: { configured: false } });
  });
});
