import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Clock } from '../../src/common/clock.js';
import { createAccount } from '../../test/support/accounts.js';
import { startTestApp, type TestApp } from '../../test/support/test-app.js';
import { startTestProxy, type TestProxy } from '../js/test/support/test-proxy.js';
import { type LanguageRunner, RUNNERS } from './runners.js';

/**
 * Every client library against a live server: the conformance scenario (scenario.json) run by each language's own
 * runner as a subprocess, with the real interpreter, then the library's own tests. A step fails here when it failed
 * there; its output is printed. See scenario.md.
 */
interface ScenarioStep {
  id: string;
  title: string;
  /** A route the step needs; only when the server answers 404 for it may a runner skip the step. */
  requires_route?: string;
}
interface StepResult {
  id: string;
  status: 'passed' | 'failed' | 'skipped';
  reason?: string;
  error?: string;
}
interface Finished {
  code: number | null;
  output: string;
}

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const SCENARIO_PATH = fileURLToPath(new URL('./scenario.json', import.meta.url));
const scenario = JSON.parse(readFileSync(SCENARIO_PATH, 'utf8')) as { steps: ScenarioStep[] };
// A hang guard only: the scenario moves 20 MiB twice and may wait out a rate-limit window (up to a minute).
const RUN_GUARD_MS = 8 * 60_000;
/** CONFORMANCE_OUTPUT=1 prints the runners' output even when they pass. */
const SHOW_OUTPUT = process.env.CONFORMANCE_OUTPUT === '1';
/** A download by signed link, as the test proxy's rules see it. */
const DOWNLOAD_BY_LINK = /^GET \/v1\/files\/[^/]+\/download\?/;

/** Runs a command without blocking this process's event loop (the server under test lives in it). */
function run(command: string[], cwd: string, env: Record<string, string>): Promise<Finished> {
  return new Promise((done) => {
    let output = '';
    const child = spawn(command[0], command.slice(1), { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), RUN_GUARD_MS);
    child.on('error', (error) => {
      clearTimeout(guard);
      done({ code: null, output: `${output}\n${command[0]} could not be started: ${error.message}` });
    });
    child.on('close', (code) => {
      clearTimeout(guard);
      done({ code, output });
    });
  });
}

async function routeIsMissing(baseUrl: string, apiKey: string, route: string): Promise<boolean> {
  const [method, path] = route.split(' ');
  const answer = await fetch(`${baseUrl}${path}`, { method, headers: { Authorization: `Bearer ${apiKey}` } });
  await answer.body?.cancel();
  return answer.status === 404;
}

describe.each(RUNNERS)('the $language client library against a live server', (runner: LanguageRunner) => {
  let t: TestApp;
  /** Step 13's way to the server: it cuts the first download by link part-way and moves the server's clock on. */
  let pastLinkExpiry: TestProxy;
  let conformance: Finished;
  let report: StepResult[] = [];
  let apiKey: string;
  const workDir = mkdtempSync(join(tmpdir(), `fss-conformance-${runner.language}-`));
  const cwd = join(ROOT, runner.cwd);

  beforeAll(async () => {
    const interpreter = await run([runner.interpreter.command, ...runner.interpreter.versionArgs], cwd, {});
    if (interpreter.code !== 0) {
      throw new Error(`${runner.interpreter.command} is needed by the ${runner.language} library's tests; node scripts/ensure-test-prerequisites.mjs installs it.\n${interpreter.output}`);
    }
    // A connection gone silent is closed after 20 s rather than 60: the libraries' tests of an upload held by a stalled
    // PATCH wait for it.
    t = await startTestApp({ HTTP_IDLE_TIMEOUT_SECONDS: '20' });
    apiKey = (await createAccount(t.app)).apiKey;
    const free = await createAccount(t.app, { plan: 'free', name: 'Free conformance account' });
    pastLinkExpiry = await startTestProxy({ upstream: t.baseUrl });
    // The link the download began with expires meanwhile: the server's clock is two hours on when the cut reaches the
    // library, as after a long download over a slow line.
    const clock = vi.spyOn(t.app.get(Clock), 'now');
    pastLinkExpiry.cutAnswers(DOWNLOAD_BY_LINK, {
      afterBodyBytes: 1024 * 1024,
      times: 1,
      onCut: () => clock.mockImplementation(() => new Date(Date.now() + 2 * 3600_000)),
    });
    conformance = await run(runner.conformance, cwd, {
      ...runner.env,
      FSS_BASE_URL: t.baseUrl,
      FSS_API_KEY: apiKey,
      FSS_FREE_API_KEY: free.apiKey,
      FSS_SCENARIO: SCENARIO_PATH,
      FSS_REPORT: join(workDir, 'report.json'),
      FSS_WORK_DIR: workDir,
      FSS_PAST_LINK_EXPIRY_URL: pastLinkExpiry.url,
    });
    clock.mockRestore();
    try {
      report = (JSON.parse(readFileSync(join(workDir, 'report.json'), 'utf8')) as { steps: StepResult[] }).steps;
    } catch {
      report = [];
    }
  }, RUN_GUARD_MS + 60_000);
  afterAll(async () => {
    await pastLinkExpiry?.close();
    await t?.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('runs the conformance scenario to the end', () => {
    if (SHOW_OUTPUT || conformance.code !== 0 || report.length !== scenario.steps.length) console.log(`--- ${runner.language} runner output ---\n${conformance.output}`);
    expect(report.map((step) => step.id), 'the steps the runner reported').toEqual(scenario.steps.map((step) => step.id));
    expect(conformance.code, 'the runner exit code').toBe(0);
  });

  for (const step of scenario.steps) {
    it(`${step.id}: ${step.title}`, async (ctx) => {
      const result = report.find((entry) => entry.id === step.id);
      expect(result, `the runner did not report step ${step.id}`).toBeDefined();
      if (result!.status === 'skipped') {
        // A runner may skip only a step whose route this server does not have, and must say so.
        expect(step.requires_route, `step ${step.id} may not be skipped (${result!.reason})`).toBeDefined();
        expect(await routeIsMissing(t.baseUrl, apiKey, step.requires_route!), `${step.requires_route} exists, so step ${step.id} must pass`).toBe(true);
        ctx.skip(`${runner.language}: ${result!.reason}`);
      }
      expect(result!.status, result!.error ?? '').toBe('passed');
    });
  }

  it('download_past_link_expiry went through its proxy: cut once, then continued with a fresh link', () => {
    const downloads = pastLinkExpiry.requests.filter((line) => DOWNLOAD_BY_LINK.test(line));
    expect(pastLinkExpiry.answersCut).toBe(1);
    expect(downloads).toHaveLength(2);
    expect(new Set(downloads.map((line) => new URL(line.split(' ')[1], 'http://x').searchParams.get('signature'))).size).toBe(2);
  });

  it("passes the library's own tests (unit tests and README examples) against the server", async () => {
    const suite = await run(runner.suite, cwd, {
      ...runner.env,
      FILE_STORAGE_BASE_URL: t.baseUrl,
      FILE_STORAGE_API_KEY: (await createAccount(t.app)).apiKey,
      FSS_WORK_DIR: workDir,
    });
    if (SHOW_OUTPUT || suite.code !== 0) console.log(`--- ${runner.language} suite output ---\n${suite.output}`);
    expect(suite.code, `the ${runner.language} suite's exit code; its output is above`).toBe(0);
    if (runner.skipped) expect(suite.output, `the ${runner.language} suite skipped a test`).not.toMatch(runner.skipped);
  }, RUN_GUARD_MS);

  it.runIf(runner.check)('passes its static check', async () => {
    const check = await run(runner.check!, cwd, runner.env);
    if (SHOW_OUTPUT || check.code !== 0) console.log(`--- ${runner.language} check output ---\n${check.output}`);
    expect(check.code, `${runner.check!.join(' ')} exit code; its output is above`).toBe(0);
  }, RUN_GUARD_MS);
});
