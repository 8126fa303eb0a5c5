import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface HoldableProxy {
  port: number;
  /** From now on, bytes from clients are kept back (connections stay open), as a stalled network would. */
  hold(): void;
  /** Resolves once some client bytes are being kept back: a request is stuck at the barrier. */
  somethingHeld(): Promise<void>;
  /** Sends on everything kept back and stops holding. */
  release(): void;
  /** The next connection to send more than `bytes` is reset on both sides, as a server restarting mid-request would. */
  cutOnceAfter(bytes: number): void;
  /** Connections cut by cutOnceAfter so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

/**
 * A TCP proxy to 127.0.0.1:`targetPort` that can stall its clients' requests on demand: a barrier made of a real network.
 * `listenPort` brings a closed proxy back on the port its clients know (0: any free port).
 */
export async function startHoldableProxy(targetPort: number, listenPort = 0): Promise<HoldableProxy> {
  let holding = false;
  let cutAfter: number | null = null;
  let cuts = 0;
  const kept: Array<{ upstream: Socket; chunk: Buffer }> = [];
  const waiters: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let sent = 0;
    client.on('data', (chunk: Buffer) => {
      sent += chunk.length;
      if (cutAfter !== null && sent > cutAfter) {
        cutAfter = null;
        cuts++;
        upstream.destroy();
        return void client.resetAndDestroy();
      }
      if (!holding) return void upstream.write(chunk);
      kept.push({ upstream, chunk });
      waiters.splice(0).forEach((wake) => wake());
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hold: () => (holding = true),
    cutOnceAfter: (bytes) => (cutAfter = bytes),
    get cuts() {
      return cuts;
    },
    somethingHeld: () => (kept.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    release() {
      holding = false;
      for (const { upstream, chunk } of kept.splice(0)) upstream.write(chunk);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
