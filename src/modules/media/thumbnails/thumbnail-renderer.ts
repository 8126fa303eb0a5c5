import { Injectable } from '@nestjs/common';
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Metadata } from 'sharp';
import { AppConfig } from '../../../config/app-config.js';
import { runTool, ToolFailedError, ToolMissingError, type ToolLimits } from './run-tool.js';

/** Thumbnails fit this box (in px), keeping the aspect ratio; smaller images are not enlarged. */
export const THUMBNAIL_BOX = 256;
/** Frames and pages are rendered at twice the box, then downscaled by sharp for a crisp result. */
const INTERMEDIATE_BOX = THUMBNAIL_BOX * 2;
/** A rendered frame or page at 512 px is a few hundred KB of PNG; anything far bigger is not what we asked for. */
const MAX_TOOL_OUTPUT = 32 * 1024 * 1024;
/** Rows of the full width that libvips holds while it streams an image (measured: 165 to 190, whatever the height). */
const STREAMED_ROWS = 200;
/** Demuxers ffmpeg may use: real video containers only, never playlists (HLS, concat) that could read other files. */
const VIDEO_DEMUXERS = 'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,flv,mpegts,mpeg,ogg,asf,h264,hevc,m4v,mpegvideo,rawvideo,image2';

/** sharp's entry point for the SVG child: resolved here, since a child's own resolution would start from its cwd. */
const SHARP_ENTRY = createRequire(import.meta.url).resolve('sharp');
/** Rasterises the SVG at argv[2] to a PNG fitting argv[3] px on stdout, refusing more than argv[4] declared pixels. */
const SVG_RASTER_SCRIPT = `
const [sharpEntry, input, box, maxPixels] = process.argv.slice(1);
const { default: sharp } = await import(sharpEntry);
sharp.concurrency(1);
const png = await sharp(input, { limitInputPixels: Number(maxPixels), failOn: 'warning' })
  .resize(Number(box), Number(box), { fit: 'inside', withoutEnlargement: true }).png().toBuffer();
process.stdout.write(png);
`;

/** The media cannot be turned into a thumbnail and never will be (corrupt, hostile, unsupported). */
export class UnusableMediaError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnusableMediaError';
  }
}

/**
 * Renders a WebP thumbnail from a file on local disk: images with sharp (libvips), videos with ffmpeg
 * (the frame one second in, or the first frame of a shorter video), PDFs with poppler's pdftoppm (page 1).
 * Every path is bounded: sharp refuses images declaring more than THUMBNAIL_MAX_INPUT_PIXELS before decoding
 * them and stops at THUMBNAIL_TIMEOUT_MS; the tools run under runTool's time, memory and output limits.
 */
@Injectable()
export class ThumbnailRenderer {
  constructor(private readonly config: AppConfig) {}

  async render(kind: 'image' | 'video' | 'pdf', path: string): Promise<Buffer> {
    try {
      if (kind === 'image') return await this.toWebp((await mayBeSvg(path)) ? await this.svgRaster(path) : path);
      if (kind === 'video') return await this.toWebp(await this.videoFrame(path));
      return await this.toWebp(await this.pdfPage(path));
    } catch (error) {
      // A missing tool says nothing about the media: the caller skips the thumbnail instead of failing it.
      if (error instanceof UnusableMediaError || error instanceof ToolMissingError) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new UnusableMediaError(`cannot make a ${kind} thumbnail: ${message}`, { cause: error });
    }
  }

  private async toWebp(input: string | Buffer): Promise<Buffer> {
    if (Buffer.isBuffer(input) && input.length === 0) throw new UnusableMediaError('the tool rendered nothing');
    // Loaded on the first thumbnail: libvips costs tens of MB that a process making none should not carry.
    const { default: sharp } = await import('sharp');
    const options = { limitInputPixels: this.config.media.maxInputPixels, failOn: 'warning', animated: false, sequentialRead: true } as const;
    const meta = await sharp(input, options).metadata();
    this.refuseWholeDecodeOverBudget(meta);
    this.refuseStreamedRowsOverBudget(meta);
    if (meta.format === 'tiff' && typeof input === 'string') this.refuseTileRowsOverBudget(meta, await readTiffTileSize(input));
    return sharp(input, options)
      .rotate()
      .resize(THUMBNAIL_BOX, THUMBNAIL_BOX, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 75, effort: 4 })
      .timeout({ seconds: Math.max(1, Math.round(this.config.media.toolTimeoutMs / 1000)) })
      .toBuffer();
  }

  /**
   * libvips streams most images in strips, but some must be decoded whole before a pixel can be shrunk: a GIF frame,
   * an interlaced PNG, a progressive JPEG, an AVIF. A file of a few KB can declare one that needs GBs in this process
   * (a 1 KB 8000 × 8000 AVIF took 1.2 GB), so their decoded size, read from the header, is held to THUMBNAIL_MAX_DECODE_MB.
   */
  private refuseWholeDecodeOverBudget(meta: Metadata): void {
    const pixels = (meta.width ?? 0) * (meta.height ?? 0);
    // Over the pixel limit: sharp refuses it, with its own message, before decoding anything.
    if (pixels > this.config.media.maxInputPixels) return;
    const bytesPerPixel = wholeDecodeBytesPerPixel(meta);
    if (bytesPerPixel === 0) return;
    const neededMb = Math.ceil((pixels * bytesPerPixel) / (1024 * 1024));
    if (neededMb > this.config.media.maxDecodeMb) {
      throw new UnusableMediaError(
        `the ${meta.width} x ${meta.height} ${describeWholeDecode(meta)} must be decoded whole, needing about ${neededMb} MB, more than THUMBNAIL_MAX_DECODE_MB (${this.config.media.maxDecodeMb})`,
      );
    }
  }

  /**
   * Streaming holds rows, not the image: about STREAMED_ROWS of them across the pipeline's buffers, plus the rows one
   * output row is shrunk from. Of ordinary widths that is a few MB; of an extreme one it is GBs (a 78 KB PNG of
   * 1,000,000 x 10 took 1.5 GB; 0.8 MB of 25,000,000 x 4, both within the pixel limit, had the process OOM-killed).
   * JPEGs are shrunk up to 8 times while decoded, so theirs are counted at that width.
   */
  private refuseStreamedRowsOverBudget(meta: Metadata): void {
    const width = meta.width ?? 0;
    const height = meta.height ?? 0;
    if (width * height > this.config.media.maxInputPixels) return;
    const shrink = Math.ceil(Math.max(width, height) / THUMBNAIL_BOX);
    const decodedWidth = meta.format === 'jpeg' ? Math.ceil(width / Math.min(8, Math.max(1, shrink))) : width;
    const rowBytes = decodedWidth * (meta.channels ?? 4) * (SAMPLE_BYTES[meta.depth ?? 'uchar'] ?? 1);
    const rows = STREAMED_ROWS + Math.min(height, 2 * shrink);
    const neededMb = Math.ceil((rowBytes * rows) / (1024 * 1024));
    if (neededMb > this.config.media.maxDecodeMb) {
      throw new UnusableMediaError(
        `the ${width} x ${height} image is streamed about ${rows} rows at a time, needing about ${neededMb} MB, more than THUMBNAIL_MAX_DECODE_MB (${this.config.media.maxDecodeMb})`,
      );
    }
  }

  /**
   * A tiled TIFF is decoded a row of tiles at a time, however small the thumbnail: tiles of up to 4096 × 4096 make that
   * a few hundred MB from a file of a few hundred KB (24000 × 4096 RGBA in 4096 px tiles grew the process by 0.5 GB).
   * Counted as libvips holds them, up to two rows of tiles as wide as the image, against THUMBNAIL_MAX_DECODE_MB.
   */
  private refuseTileRowsOverBudget(meta: Metadata, tile: { width: number; height: number } | null): void {
    const width = meta.width ?? 0;
    const height = meta.height ?? 0;
    if (!tile || width * height > this.config.media.maxInputPixels) return;
    const bytesPerPixel = (meta.channels ?? 4) * (SAMPLE_BYTES[meta.depth ?? 'uchar'] ?? 1);
    const rowBytes = Math.ceil(width / tile.width) * tile.width * tile.height * bytesPerPixel;
    const neededMb = Math.ceil((Math.min(2, Math.ceil(height / tile.height)) * rowBytes) / (1024 * 1024));
    if (neededMb > this.config.media.maxDecodeMb) {
      throw new UnusableMediaError(
        `the ${width} x ${height} TIFF in ${tile.width} x ${tile.height} tiles must be decoded a row of tiles at a time, needing about ${neededMb} MB, more than THUMBNAIL_MAX_DECODE_MB (${this.config.media.maxDecodeMb})`,
      );
    }
  }

  private async videoFrame(path: string): Promise<Buffer> {
    const frameAt = async (seconds: number) =>
      runTool(
        this.config.media.ffmpegPath,
        [
          '-nostdin', '-hide_banner', '-loglevel', 'error', '-threads', '2',
          '-protocol_whitelist', 'file', '-format_whitelist', VIDEO_DEMUXERS,
          '-ss', String(seconds), '-i', path,
          '-frames:v', '1', '-an', '-sn', '-dn',
          '-vf', `scale=w=${INTERMEDIATE_BOX}:h=${INTERMEDIATE_BOX}:force_original_aspect_ratio=decrease`,
          '-f', 'image2pipe', '-c:v', 'png', 'pipe:1',
        ],
        this.limits(),
      );
    const frame = await frameAt(1);
    // A video shorter than a second has no frame there: take its first one instead.
    return frame.length > 0 ? frame : frameAt(0);
  }

  /**
   * librsvg decodes the pictures an SVG embeds (data: URIs) whole, and neither the pixel limit nor the decode budget sees
   * them (only the SVG's own declared size): 1.8 MB of SVG held 1.1 GB. So SVG is rasterised in a child process under
   * the tools' limits, where such a picture costs the server nothing and a librsvg abort kills only the child.
   */
  private async svgRaster(path: string): Promise<Buffer> {
    const args = ['--input-type=module', '-e', SVG_RASTER_SCRIPT, SHARP_ENTRY, path, String(INTERMEDIATE_BOX), String(this.config.media.maxInputPixels)];
    try {
      return await runTool(process.execPath, args, this.limits());
    } catch (error) {
      if (!(error instanceof ToolFailedError)) throw error;
      // The tool's message names the node binary; say what ran, and within which limits.
      const { toolMemoryMb, toolTimeoutMs } = this.config.media;
      const detail = error.message.replace(process.execPath, 'the SVG renderer');
      throw new UnusableMediaError(`cannot render the SVG within THUMBNAIL_TOOL_MEMORY_MB (${toolMemoryMb}) and THUMBNAIL_TIMEOUT_MS (${toolTimeoutMs}): ${detail}`);
    }
  }

  private pdfPage(path: string): Promise<Buffer> {
    return runTool(this.config.media.pdftoppmPath, ['-f', '1', '-l', '1', '-singlefile', '-png', '-scale-to', String(INTERMEDIATE_BOX), path], this.limits());
  }

  private limits(): ToolLimits {
    return { timeoutMs: this.config.media.toolTimeoutMs, memoryMb: this.config.media.toolMemoryMb, maxOutputBytes: MAX_TOOL_OUTPUT };
  }
}

/**
 * Whether libvips might load the file as SVG: "<svg" near its start (as libvips looks for it), or gzip (SVGZ).
 * A raster image taken for one by mistake only costs a child process.
 */
async function mayBeSvg(path: string): Promise<boolean> {
  const file = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await file.read({ buffer: Buffer.alloc(4096), position: 0 });
    const head = buffer.subarray(0, bytesRead);
    return (head[0] === 0x1f && head[1] === 0x8b) || head.toString('latin1').toLowerCase().includes('<svg');
  } finally {
    await file.close();
  }
}

/**
 * TileWidth and TileLength of a TIFF's first image (the one rendered), from its first IFD; null when it is in strips or
 * unreadable (sharp judges the file itself). Classic TIFF and BigTIFF, either byte order.
 */
async function readTiffTileSize(path: string): Promise<{ width: number; height: number } | null> {
  const file = await open(path, 'r');
  try {
    const read = async (position: number, length: number) => {
      const { buffer, bytesRead } = await file.read({ buffer: Buffer.alloc(length), position });
      return buffer.subarray(0, bytesRead);
    };
    const header = await read(0, 16);
    if (header.length < 8) return null;
    const little = header.toString('latin1', 0, 2) === 'II';
    const u16 = (b: Buffer, at: number) => (little ? b.readUInt16LE(at) : b.readUInt16BE(at));
    const u32 = (b: Buffer, at: number) => (little ? b.readUInt32LE(at) : b.readUInt32BE(at));
    const u64 = (b: Buffer, at: number) => Number(little ? b.readBigUInt64LE(at) : b.readBigUInt64BE(at));
    const big = u16(header, 2) === 43;
    if (big && header.length < 16) return null;
    const ifd = big ? u64(header, 8) : u32(header, 4);
    const countBytes = await read(ifd, big ? 8 : 2);
    if (countBytes.length < (big ? 8 : 2)) return null;
    const entrySize = big ? 20 : 12;
    const count = Math.min(big ? u64(countBytes, 0) : u16(countBytes, 0), 4096);
    const entries = await read(ifd + countBytes.length, count * entrySize);
    const tags = new Map<number, number>();
    for (let at = 0; at + entrySize <= entries.length; at += entrySize) {
      const tag = u16(entries, at);
      if (tag !== 322 && tag !== 323) continue;
      const type = u16(entries, at + 2);
      const value = at + (big ? 12 : 8);
      // SHORT, LONG or LONG8, held in the entry itself.
      tags.set(tag, type === 3 ? u16(entries, value) : type === 16 && big ? u64(entries, value) : u32(entries, value));
    }
    const width = tags.get(322);
    const height = tags.get(323);
    return width && height ? { width, height } : null;
  } finally {
    await file.close();
  }
}

const SAMPLE_BYTES: Record<string, number> = { uchar: 1, char: 1, ushort: 2, short: 2, uint: 4, int: 4, float: 4, complex: 8, double: 8, dpcomplex: 16 };

/**
 * Bytes per pixel the decoder holds at once for an image it cannot stream, or 0 when it streams. HEIF/AVIF is measured
 * (libheif's planes plus the RGB copy: about 18 bytes per pixel for 8-bit RGB), the others are their decoded pixels.
 */
function wholeDecodeBytesPerPixel(meta: Metadata): number {
  const channels = meta.channels ?? 4;
  const sampleBytes = SAMPLE_BYTES[meta.depth ?? 'uchar'] ?? 1;
  if (meta.format === 'heif') return 20 * sampleBytes;
  if (meta.format === 'gif') return 4;
  if ((meta.format === 'png' || meta.format === 'jpeg') && meta.isProgressive) return channels * sampleBytes;
  return 0;
}

function describeWholeDecode(meta: Metadata): string {
  if (meta.format === 'heif') return 'HEIF/AVIF image';
  if (meta.format === 'gif') return 'GIF';
  return meta.format === 'png' ? 'interlaced PNG' : 'progressive JPEG';
}

export { ToolFailedError, ToolMissingError };
