#!/usr/bin/env node
// What `npm test` needs besides Node and the npm packages: the system tools some tests use, Redis, and
// PostgreSQL. Missing tools are installed when this machine can (root and apt-get); otherwise this stops
// at once with the exact command to run. Redis and PostgreSQL are started when they are installed here
// but not running. So the suite never fails, or skips, for want of something it could have said first.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const log = (message) => console.error(`[test setup] ${message}`);

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
const onPath = (command) => (process.env.PATH ?? '').split(delimiter).some((dir) => dir && executable(join(dir, command)));

// Each tool where the tests look for it (test/support/browser.ts, test/support/media.ts, test/e2e/media/media-support.ts,
// clients/conformance/runners.ts).
const TOOLS = [
  { name: 'chromium', package: 'chromium', usedBy: 'browser tests (Swagger UI, share page, queue dashboard)', present: () => executable(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium') },
  { name: 'ffmpeg', package: 'ffmpeg', usedBy: 'video thumbnail tests', present: () => onPath('ffmpeg') },
  { name: 'pdftoppm', package: 'poppler-utils', usedBy: 'PDF thumbnail tests', present: () => onPath('pdftoppm') },
  { name: 'clamd', package: 'clamav-daemon', usedBy: 'virus scanning tests', present: () => ['/usr/sbin/clamd', '/usr/bin/clamd', '/usr/local/sbin/clamd'].some(executable) },
  // The client libraries' tests (clients/conformance/runners.ts) run each library with its real interpreter.
  { name: 'python3 (3.11 or later)', package: 'python3', usedBy: 'Python client library tests', present: () => runs('python3', ['-c', 'import sys; sys.exit(sys.version_info < (3, 11))']) },
  { name: 'mypy', package: 'mypy', usedBy: "Python client library's type check", present: () => onPath('mypy') },
  { name: 'php', package: 'php-cli', usedBy: 'PHP client library tests', present: () => runs('php', ['--version']) },
  { name: 'php curl extension', package: 'php-curl', usedBy: 'PHP client library tests', present: () => runs('php', ['-r', 'exit(extension_loaded("curl") ? 0 : 1);']) },
  { name: 'ruby', package: 'ruby', usedBy: 'Ruby client library tests', present: () => runs('ruby', ['--version']) },
];

/** True when the command exists and exits with 0. */
function runs(command, args) {
  return onPath(command) && spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

function ensureTools() {
  const missing = TOOLS.filter((tool) => !tool.present());
  if (missing.length === 0) return;
  const packages = missing.map((tool) => tool.package);
  for (const tool of missing) log(`missing ${tool.name} (Debian package ${tool.package}), needed by the ${tool.usedBy}`);
  const isRoot = process.getuid?.() === 0;
  if (isRoot && onPath('apt-get')) {
    log(`installing ${packages.join(' ')} with apt-get ...`);
    const run = (args) => spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    const installed = run(['update', '-qq']).status === 0 && run(['install', '-y', '-qq', ...packages]).status === 0;
    const stillMissing = TOOLS.filter((tool) => !tool.present());
    if (installed && stillMissing.length === 0) return;
    stop(`apt-get could not install ${stillMissing.map((tool) => tool.package).join(' ') || packages.join(' ')}; see its messages above.`);
  }
  const command = `${isRoot ? '' : 'sudo '}apt-get install -y ${packages.join(' ')}`;
  stop(
    onPath('apt-get')
      ? `Install them, then run npm test again:\n\n    ${command}\n`
      : `Install them with your system's package manager (on Debian or Ubuntu: ${command}), then run npm test again.`,
  );
}

function stop(message) {
  log(message);
  process.exit(1);
}

/** True when something accepts TCP connections at host:port within a second. */
function listening(host, port) {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

async function waitUntilListening(host, port, seconds = 30) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await listening(host, port)) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

const isLocal = (host) => ['127.0.0.1', 'localhost', '::1'].includes(host);
const hostOf = (url) => url.hostname.replace(/^\[|\]$/g, '');

async function ensureRedis() {
  const url = new URL(process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const port = Number(url.port || 6379);
  if (await listening(hostOf(url), port)) return;
  if (!isLocal(hostOf(url)) || !onPath('redis-server')) {
    stop(`Redis does not answer at ${url.origin}. Start it (for example: redis-server --daemonize yes) or point REDIS_URL at a running one.`);
  }
  log(`starting Redis on 127.0.0.1:${port}`);
  const dir = join(tmpdir(), 'fss-test-redis');
  mkdirSync(dir, { recursive: true });
  spawnSync('redis-server', ['--daemonize', 'yes', '--bind', '127.0.0.1', '-::1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', join(dir, 'redis.log')], { stdio: 'inherit' });
  if (!(await waitUntilListening('127.0.0.1', port))) stop(`Redis did not come up on port ${port}; see ${join(dir, 'redis.log')}.`);
}

async function ensurePostgres() {
  const databases = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim());
  if (!databases.includes('postgres')) return;
  const url = new URL(process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  const port = Number(url.port || 5432);
  if (await listening(hostOf(url), port)) return;
  const clusters = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql').sort() : [];
  const start = clusters.length > 0 ? `pg_ctlcluster --skip-systemctl-redirect ${clusters.at(-1)} main start` : null;
  if (!isLocal(hostOf(url)) || !start || process.getuid?.() !== 0 || !onPath('pg_ctlcluster')) {
    stop(
      `PostgreSQL does not answer at ${url.hostname}:${port}. Start it${start ? ` (${process.getuid?.() === 0 ? '' : 'sudo '}${start})` : ''}, ` +
        'set TEST_POSTGRES_URL to a running one, or run the SQLite half only: TEST_DATABASES=sqlite npm test',
    );
  }
  log(`starting PostgreSQL ${clusters.at(-1)} on port ${port}`);
  spawnSync('sh', ['-c', start], { stdio: 'inherit' });
  if (!(await waitUntilListening(hostOf(url), port))) stop('PostgreSQL did not come up; see /var/log/postgresql.');
}

ensureTools();
await ensureRedis();
await ensurePostgres();
