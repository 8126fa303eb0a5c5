// The upload hashing thread: one MD5 per upload id, fed slots in order, each slot given back once hashed.
// Plain CommonJS loading only node:crypto, so the thread's isolate stays small; copied next to the compiled code by nest-cli.json's assets.
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');

const hashes = new Map();
parentPort.on('message', ({ id, slot, length, end }) => {
  let hash = hashes.get(id);
  if (!hash) hashes.set(id, (hash = createHash('md5')));
  if (slot) {
    hash.update(new Uint8Array(slot, 0, length));
    parentPort.postMessage({ id, slot }, [slot]);
  }
  if (end === 'digest') parentPort.postMessage({ id, digest: hash.digest('hex') });
  if (end) hashes.delete(id);
});
