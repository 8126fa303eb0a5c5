import type { RequestBody } from './http.js';

/**
 * What `files.upload` takes: a file path (Node), a Blob or File, a Buffer or Uint8Array,
 * a web ReadableStream, or a Node Readable (any async iterable of bytes).
 */
export type UploadSource = string | Blob | Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

export interface UploadProgress {
  /** Bytes of the file sent so far. */
  loaded: number;
  /** The file's size, when known. */
  total: number | undefined;
}

/** A source as the uploaders use it: its size when known, and its bytes as a stream, again if it can be reopened. */
export interface OpenedSource {
  name: string | undefined;
  size: number | undefined;
  /** A path, Blob or buffer can be read again (for a retry, or a tus chunk); a caller's stream only once. */
  replayable: boolean;
  read(start?: number, end?: number): Promise<ReadableStream<Uint8Array>>;
}

const SLICE_BYTES = 64 * 1024;

export async function openSource(source: UploadSource): Promise<OpenedSource> {
  if (typeof source === 'string') {
    const [{ createReadStream }, { stat }, { basename }] = await Promise.all([import('node:fs'), import('node:fs/promises'), import('node:path')]);
    const info = await stat(source);
    return {
      name: basename(source),
      size: info.size,
      replayable: true,
      read: async (start = 0, end = info.size) =>
        streamFromIterable(end > start ? createReadStream(source, { start, end: end - 1, highWaterMark: SLICE_BYTES }) : emptyIterable()),
    };
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return {
      name: (source as Partial<File>).name || undefined,
      size: source.size,
      replayable: true,
      read: async (start = 0, end = source.size) => source.slice(start, end).stream() as ReadableStream<Uint8Array>,
    };
  }
  if (source instanceof Uint8Array) {
    return {
      name: undefined,
      size: source.byteLength,
      replayable: true,
      read: async (start = 0, end = source.byteLength) => streamFromIterable(slices(source.subarray(start, end))),
    };
  }
  let used = false;
  const once = (stream: () => ReadableStream<Uint8Array>) => async () => {
    if (used) throw new TypeError('A stream source can be read only once.');
    used = true;
    return stream();
  };
  if (typeof ReadableStream !== 'undefined' && source instanceof ReadableStream) {
    return { name: undefined, size: undefined, replayable: false, read: once(() => source) };
  }
  if (source && typeof (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === 'function') {
    return { name: undefined, size: undefined, replayable: false, read: once(() => streamFromIterable(source as AsyncIterable<Uint8Array>)) };
  }
  throw new TypeError('upload() takes a file path, a Blob, a Buffer/Uint8Array, a ReadableStream or a Node Readable.');
}

/**
 * A multipart/form-data body produced as a stream: the fields, then the file's bytes as they are read, then the
 * closing boundary. The file is never held whole in memory.
 */
export function multipartBody(
  source: OpenedSource,
  filename: string,
  fields: Record<string, string | undefined>,
  onProgress?: (progress: UploadProgress) => void,
): RequestBody {
  const boundary = `----FileStorageClient${crypto.randomUUID().replaceAll('-', '')}`;
  const encoder = new TextEncoder();
  let head = '';
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined) head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  head +=
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoted(filename)}"; filename*=UTF-8''${encodeURIComponent(filename)}\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n';
  const tail = `\r\n--${boundary}--\r\n`;
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    replayable: source.replayable,
    open() {
      let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
      let loaded = 0;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (!reader) {
            reader = (await source.read()).getReader();
            controller.enqueue(encoder.encode(head));
            onProgress?.({ loaded, total: source.size });
            return;
          }
          const { value, done } = await reader.read();
          if (done) {
            controller.enqueue(encoder.encode(tail));
            controller.close();
            return;
          }
          controller.enqueue(value);
          loaded += value.byteLength;
          onProgress?.({ loaded, total: source.size });
        },
        async cancel(reason) {
          await reader?.cancel(reason);
        },
      });
    },
  };
}

/** The bytes [start, end) of a source, read into one buffer: a tus chunk, bounded by the chunk size. */
export async function readChunk(source: OpenedSource, start: number, end: number): Promise<Uint8Array<ArrayBuffer>> {
  const chunk = new Uint8Array(end - start);
  let offset = 0;
  for await (const piece of iterate(await source.read(start, end))) {
    chunk.set(piece, offset);
    offset += piece.byteLength;
  }
  if (offset !== chunk.byteLength) throw new Error(`The source ended after ${start + offset} bytes, expected ${end}.`);
  return chunk;
}

export function streamFromIterable(iterable: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = Symbol.asyncIterator in iterable ? iterable[Symbol.asyncIterator]() : iterable[Symbol.iterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(typeof value === 'string' ? new TextEncoder().encode(value) : new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

export async function* iterate(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

function* slices(bytes: Uint8Array): Generator<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += SLICE_BYTES) yield bytes.subarray(offset, offset + SLICE_BYTES);
}

async function* emptyIterable(): AsyncGenerator<Uint8Array> {}

function quoted(filename: string): string {
  return filename.replace(/["\\\r\n]/g, (c) => encodeURIComponent(c));
}
