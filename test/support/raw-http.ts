import { connect } from 'node:net';

/**
 * Sends raw bytes on a fresh connection and returns everything the server writes before closing it: what a test
 * sees on the wire, where fetch would hide it (a HEAD answer's body) or refuse to send it (malformed requests).
 */
export function rawExchange(baseUrl: string, bytes: string | Uint8Array): Promise<string> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(20_000, () => socket.destroy(new Error('no answer within 20 s')));
  });
}
