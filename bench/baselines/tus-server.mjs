// Baseline (b): what a Node user would otherwise pick for large uploads: @tus/server with
// @tus/file-store, defaults. It does not hash.
import { createServer } from 'node:http';
import { Server } from '@tus/server';
import { FileStore } from '@tus/file-store';

const directory = process.argv[2];
const tus = new Server({ path: '/files', datastore: new FileStore({ directory }) });
const server = createServer((req, res) => tus.handle(req, res));
server.listen(0, '127.0.0.1', () => process.stdout.write(`LISTENING ${server.address().port}\n`));
