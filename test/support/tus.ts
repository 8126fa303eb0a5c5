import { createServer, type Socket, connect } from 'node:net';
import { join } from 'node:path';
import { type DetailedError, Upload, type UploadOptions } from 'tus-js-client';
import { runNode, startServerProcess, type ServerProcess } from './processes.js';

/** Generous retries: a resumed upload may wait for a restarted server or for a dead process's lock to expire. */
export const PATIENT_RETRIES = [0, 200, 500, 1000, 2000, 3000, 5000, 5000, 10_000, 10_000, 10_000];

export interface TusResult {
  /** The file the upload became (the X-File-Id header of the last answer). */
  fileId: string;
  uploadUrl: string;
}

/** Uploads `content` through /v1/uploads with the real tus-js-client and resolves once the file exists. */
export function tusUpload(baseUrl: string, auth: Record<string, string>, content: Buffer, options: UploadOptions = {}): Promise<TusResult> {
  return new Promise((resolve, reject) => {
    const upload: Upload = new Upload(content, {
      endpoint: `${baseUrl}/v1/uploads`,
      headers: auth,
      metadata: { filename: 'upload.bin' },
      retryDelays: PATIENT_RETRIES,
      ...options,
      onSuccess: ({ lastResponse }) => {
        const fileId = lastResponse.getHeader('X-File-Id');
        if (!fileId) return reject(new Error(`The last answer (${lastResponse.getStatus()}) named no file`));
        resolve({ fileId, uploadUrl: upload.url ?? '' });
      },
      onError: (error: Error | DetailedError) => reject(error),
    });
    upload.start();
  });
}

/**
 * Starts a tus upload and stops it (as a dropped client would) once at least `bytes` were accepted
 * by the server; resolves with its URL.
 */
export function tusUploadUntil(baseUrl: string, auth: Record<string, string>, content: Buffer, bytes: number, options: UploadOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const upload: Upload = new Upload(content, {
      endpoint: `${baseUrl}/v1/uploads`,
      headers: auth,
      metadata: { filename: 'upload.bin' },
      retryDelays: null,
      ...options,
      onChunkComplete: (_chunk, accepted) => {
        if (accepted >= bytes) void upload.abort().then(() => resolve(upload.url ?? ''), reject);
      },
      onSuccess: () => reject(new Error('The upload completed before it could be stopped')),
      onError: reject,
    });
    upload.start();
  });
}

export interface CuttingProxy {
  port: number;
  /** How many connections were cut so far. */
  cuts(): number;
  close(): Promise<void>;
}

/**
 * A TCP proxy to `targetPort` that cuts the connection carrying the upload bytes as the total
 * sent through it passes each of `cutAt` (byte counts), like a network that drops mid-request.
 */
export async function cuttingProxy(targetPort: number, cutAt: number[]): Promise<CuttingProxy> {
  const pending = [...cutAt].sort((a, b) => a - b);
  let sent = 0;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const cut = () => {
      cuts++;
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      sent += chunk.length;
      if (pending.length > 0 && sent >= pending[0]) {
        while (pending.length > 0 && sent >= pending[0]) pending.shift();
        return cut();
      }
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on('drain', () => client.resume());
    upstream.pipe(client);
    for (const socket of [client, upstream]) {
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cuts: () => cuts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * For tests of what a server killed mid-PATCH leaves in its temp dir: a built server with `serverTmp` as its TMPDIR (and
 * no clamd), an enterprise account made by the CLI, and a PATCH at offset 0 of a new upload of `length` bytes that has
 * sent `sent` of them and holds its connection open. `headers` adds request headers to the PATCH (Upload-Checksum).
 */
export async function patchHeldOpen(
  environmentEnv: Record<string, string>,
  serverTmp: string,
  { length, sent, headers = {} }: { length: number; sent: number; headers?: Record<string, string> },
): Promise<{ server: ServerProcess; env: Record<string, string>; socket: Socket }> {
  const env = { ...environmentEnv, TMPDIR: serverTmp, CLAMAV_SOCKET: join(serverTmp, 'no-clamd.sock') };
  const server = await startServerProcess(env, undefined, 60_000);
  const created = await runNode('cli.js', ['accounts', 'create', '--name', 'Crash', '--plan', 'enterprise'], env);
  if (created.code !== 0) throw new Error(`accounts create failed: ${created.stderr}`);
  const { api_key: key } = JSON.parse(created.stdout) as { api_key: string };
  const upload = await fetch(`${server.baseUrl}/v1/uploads`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Tus-Resumable': '1.0.0', 'Upload-Length': String(length), 'Upload-Metadata': `filename ${Buffer.from('c.bin').toString('base64')}` },
  });
  if (upload.status !== 201) throw new Error(`tus creation answered ${upload.status}`);
  const target = new URL(upload.headers.get('location')!, server.baseUrl);
  const socket = connect(Number(target.port), target.hostname);
  socket.on('error', () => undefined);
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.write(
    `PATCH ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${key}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n` +
      `Content-Type: application/offset+octet-stream\r\n${extra}Content-Length: ${length}\r\n\r\n`,
  );
  socket.write(Buffer.alloc(sent, 1));
  return { server, env, socket };
}
