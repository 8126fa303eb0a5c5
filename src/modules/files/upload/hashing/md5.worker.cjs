// The upload hashing thread: one MD5 per upload id, fed slots in order, each slot given back once hashed.
// Plain CommonJS loading only node:crypto, so the thread's isolate stays small; a resumable upload's PATCH (whose state
// must be saved, which Node's MD5 cannot do) loads hash-wasm on first use. Copied next to the compiled code by nest-cli.json's assets.
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');

/** id -> { hash } (ready), or { ready: Promise<hash> } while a resumed hash-wasm MD5 is being made. */
const hashes = new Map();

/** hash-wasm MD5s to reuse: each is a WebAssembly instance whose memory only a full collection frees. */
const idleWasmHashes = [];

/** A hash-wasm MD5 from a saved state (base64), or from nothing. */
async function resumedMd5(state) {
  const hash = idleWasmHashes.pop() ?? (await require('hash-wasm').createMD5());
  hash.init();
  if (state) hash.load(Buffer.from(state, 'base64'));
  return hash;
}

function handle(id, hash, { slot, length, end }) {
  if (slot) {
    hash.update(new Uint8Array(slot, 0, length));
    parentPort.postMessage({ id, slot }, [slot]);
  }
  if (end === 'digest') parentPort.postMessage({ id, digest: hash.digest('hex') });
  if (end === 'save') parentPort.postMessage({ id, state: Buffer.from(hash.save()).toString('base64') });
  if (!end) return;
  hashes.delete(id);
  if (typeof hash.save === 'function' && idleWasmHashes.length < 8) idleWasmHashes.push(hash);
}

parentPort.on('message', (message) => {
  const { id, resume } = message;
  let entry = hashes.get(id);
  if (!entry) {
    entry = resume === undefined ? { hash: createHash('md5') } : { ready: resumedMd5(resume).catch((error) => failed(id, error)) };
    hashes.set(id, entry);
  }
  if (entry.hash) return handle(id, entry.hash, message);
  // Messages of a hash still being made wait for it, in order; those of one that failed are dropped.
  entry.ready = entry.ready.then((hash) => {
    if (!hash) {
      if (message.end) hashes.delete(id);
      return null;
    }
    try {
      handle(id, hash, message);
      return hash;
    } catch (error) {
      return failed(id, error);
    }
  });
});

function failed(id, error) {
  parentPort.postMessage({ id, error: String(error?.message ?? error) });
  return null;
}
