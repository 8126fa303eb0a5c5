import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxSignal } from '../../../src/infra/outbox/outbox-signal.js';
import { createAccount } from '../../support/accounts.js';
import { startOperatorContext } from '../../support/operator-context.js';
import { createTestEnvironment, type TestEnvironment } from '../../support/test-app.js';
import { eventually } from '../../support/time.js';
import { recordEvent } from '../../support/webhook-receiver.js';

const uploaded = { file: { id: 'file_signal', name: 'f.txt', size: 1, type: 'text/plain', folder_id: null, uploaded_by: 'usr_x', created_at: new Date().toISOString() } };

/**
 * Two processes on one database and one Redis (here two application contexts, each with its own
 * process identity): a commit that records outbox events in one wakes the relay of the other.
 */
describe('a commit with outbox events is signalled to other processes', () => {
  let environment: TestEnvironment;
  let writer: INestApplicationContext;
  let relayer: INestApplicationContext;

  beforeAll(async () => {
    environment = await createTestEnvironment();
    writer = await startOperatorContext(environment.env);
    // Neither context is a server, so neither has migrated the fresh database.
    await writer.get(DataSource).runMigrations();
    relayer = await startOperatorContext(environment.env);
  });
  afterAll(async () => {
    await writer?.close();
    await relayer?.close();
    await environment.dispose();
  });

  it('through Redis, and not for a transaction that recorded nothing', async () => {
    let woken = 0;
    relayer.get(OutboxSignal).subscribe(() => woken++);
    let wokenHere = 0;
    writer.get(OutboxSignal).subscribe(() => wokenHere++);
    // Let the subscriber connections finish subscribing before anything is published.
    await eventually(async () => {
      await recordEvent(writer, 'file.uploaded', 'acc_signal', uploaded);
      return woken > 0;
    }, 20_000, 'the other process to be signalled');
    expect(wokenHere).toBeGreaterThan(0);

    // A transaction without outbox events is not a reason to wake anyone (once the signals of the commits above are in).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = { woken, wokenHere };
    await createAccount(writer);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect({ woken, wokenHere }).toEqual(before);
  });
});
