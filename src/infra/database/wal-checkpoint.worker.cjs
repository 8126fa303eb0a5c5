'use strict';
// Checkpoints a SQLite database's write-ahead log on its own connection, off the server's event loop
// (WalCheckpointer). PASSIVE: copies what no reader still needs and never waits for, or blocks, the
// server's readers and writer.
const { parentPort, workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');

const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 1000');

function checkpoint() {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    // Busy or locked this time: the next tick tries again.
    if (!/busy|locked/i.test(String(error && error.code))) parentPort.postMessage({ error: String(error) });
  }
}

const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
