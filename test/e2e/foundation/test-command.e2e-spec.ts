import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/** `npm test` on a machine that lacks what the suite needs: it says so first, and its summary names every skip. */
describe('npm test', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'fss-test-command-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('stops at once with the exact apt-get command when the system tools are missing and it cannot install them', () => {
    // A PATH with node and apt-get only, and a user who is not root: nothing to install with.
    const bin = tempDir();
    chmodSync(bin, 0o755);
    symlinkSync(process.execPath, join(bin, 'node'));
    for (const apt of ['/usr/bin/apt-get', '/bin/apt-get']) {
      if (existsSync(apt)) {
        symlinkSync(apt, join(bin, 'apt-get'));
        break;
      }
    }
    const asNobody = process.getuid?.() === 0 ? ['/usr/bin/setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'] : [];
    const [command, ...args] = [...asNobody, join(bin, 'node'), resolve('scripts/ensure-test-prerequisites.mjs')];
    const result = spawnSync(command, args, { env: { PATH: bin, HOME: bin, CHROMIUM_PATH: '/nonexistent/chromium' }, encoding: 'utf8', timeout: 20_000 });
    expect(result.status, result.stderr).toBe(1);
    expect(result.stderr).toContain('missing ffmpeg (Debian package ffmpeg)');
    expect(result.stderr).toContain('missing pdftoppm (Debian package poppler-utils)');
    expect(result.stderr).toContain('missing chromium (Debian package chromium)');
    expect(result.stderr).toContain('missing python3 (3.11 or later) (Debian package python3), needed by the Python client library tests');
    expect(result.stderr).toMatch(/sudo apt-get install -y chromium ffmpeg poppler-utils( clamav-daemon)? python3 mypy php-cli php-curl ruby\n/);
  });

  /** A throwaway vitest project holding one spec file, run through the suite's runner. */
  const runSuiteOn = (spec: string) => {
    const project = tempDir();
    symlinkSync(resolve('node_modules'), join(project, 'node_modules'));
    writeFileSync(
      join(project, 'vitest.config.mjs'),
      "import { defineConfig } from 'vitest/config';\n" +
        "export default defineConfig({ test: { projects: [{ extends: true, test: { name: 'unit', include: ['*.spec.mjs'] } }] } });\n",
    );
    writeFileSync(join(project, 'tools.spec.mjs'), spec);
    return spawnSync(process.execPath, [resolve('scripts/run-tests.mjs')], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? project, TEST_DATABASES: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
  };

  it('names every skipped test in its summary, with the reason the test gave', () => {
    const result = runSuiteOn(
      "import { it } from 'vitest';\n" +
        "it('runs', () => {});\n" +
        "it('makes a video thumbnail', (ctx) => ctx.skip('ffmpeg is not installed'));\n" +
        "it.skip('is left for later', () => {});\n",
    );
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('Skipped (2):');
    expect(result.stdout).toContain('[unit] tools.spec.mjs > makes a video thumbnail: ffmpeg is not installed');
    expect(result.stdout).toContain('[unit] tools.spec.mjs > is left for later: no reason given');
    expect(result.stdout).toMatch(/1 passed, 0 failed, 2 skipped\n$/);
  });

  it('names every failed test at the end, with the first line of its failure, and exits 1', () => {
    const result = runSuiteOn(
      "import { expect, it } from 'vitest';\n" +
        "it('runs', () => {});\n" +
        "it('counts the files', () => expect(2).toBe(3));\n",
    );
    expect(result.status, result.stdout + result.stderr).toBe(1);
    expect(result.stdout).toMatch(/Failed \(1\):\n  \[unit\] tools\.spec\.mjs > counts the files: AssertionError: expected 2 to be 3.*\n\n1 passed, 1 failed\n$/);
  });
});
