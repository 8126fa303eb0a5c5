import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

/** Small real media, generated on the spot, for thumbnail and scan tests. */

export function pngImage(width = 640, height = 480): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } }).png().toBuffer();
}

export function jpegImage(width = 800, height = 600): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 20, g: 120, b: 220 } } }).jpeg().toBuffer();
}

/**
 * A valid PNG whose header declares `width` x `height` pixels but carries almost no data: a
 * decompression bomb as a decoder sees it before reading a byte of pixels.
 */
export function hugeDeclaredPng(width = 100_000, height = 100_000): Buffer {
  // 8-bit RGB, with a few zero bytes of data.
  return pngOf(width, height, { bitDepth: 8, colourType: 2 }, deflateSync(Buffer.alloc(1024)));
}

/** A PNG file of the given header and compressed image data (one IDAT chunk), written byte by byte. */
function pngOf(width: number, height: number, { bitDepth, colourType }: { bitDepth: number; colourType: number }, idat: Buffer): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = bitDepth;
  header[9] = colourType;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))]);
}

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** A two-second MP4 (ffmpeg's test pattern); throws with a clear message when ffmpeg is missing. */
export function mp4Video(seconds = 2): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'fss-video-'));
  try {
    const out = join(dir, 'clip.mp4');
    const result = spawnSync('ffmpeg', ['-nostdin', '-y', '-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=duration=${seconds}:size=320x240:rate=10`, '-pix_fmt', 'yuv420p', out], {
      timeout: 30_000,
    });
    if (result.error || result.status !== 0) {
      throw new Error(`ffmpeg could not make a test video (install it: apt-get install -y ffmpeg): ${result.error?.message ?? result.stderr?.toString()}`);
    }
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A one-page PDF with a filled rectangle, written by hand with a correct cross-reference table. */
export function onePagePdf(): Buffer {
  const content = '0.2 0.4 0.8 rg 50 50 400 600 re f';
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 500 700] /Contents 4 0 R /Resources << >> >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, index) => {
    offsets.push(pdf.length);
    pdf += `${index + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

/**
 * The EICAR anti-virus test file, assembled at run time so this source file itself is not flagged by
 * a scanner on a developer's machine.
 */
export function eicar(): Buffer {
  return Buffer.from(['X5O!P%@AP[4\\PZX54(P^)7CC)7}$', 'EICAR-STANDARD-ANTIVIRUS', '-TEST-FILE!$H+H*'].join(''), 'ascii');
}

/**
 * A small SVG that embeds (as a data: URI) a PNG of `width` x `height` compressing to almost nothing: librsvg decodes
 * the embedded picture whole when it renders the SVG, and the SVG's own declared size (400 x 400) says nothing of it.
 */
export async function svgEmbeddingHugePng(width = 10_000, height = 10_000): Promise<Buffer> {
  const png = await sharp({ create: { width, height, channels: 3, background: '#369' } }).png({ compressionLevel: 9 }).toBuffer();
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400"><image href="data:image/png;base64,${png.toString('base64')}" width="400" height="400"/></svg>`,
  );
}

/**
 * A TIFF of `width` x `height` RGBA in 4096 px tiles (libvips's largest) of one colour: a few hundred KB. Made in a child
 * process, since writing it takes hundreds of MB, which would hide what a test measures of this process's peak memory.
 */
export function tiledTiffBomb(width = 24_000, height = 4_096): Buffer {
  const script = `import sharp from 'sharp';
    const tiff = await sharp({ create: { width: ${width}, height: ${height}, channels: 4, background: '#369f' } })
      .tiff({ tile: true, tileWidth: 4096, tileHeight: 4096, compression: 'deflate' }).toBuffer();
    process.stdout.write(tiff);`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 });
  if (result.status !== 0) throw new Error(`could not make the TIFF: ${result.stderr?.toString() ?? result.error?.message}`);
  return result.stdout;
}

/**
 * A real (decodable) PNG of `width` x `height` black RGBA pixels, 16 bits a sample: extreme widths compress to a few
 * KB (1,000,000 x 10 is 78 KB), yet each row is width x 8 bytes.
 */
export function widePng(width: number, height: number): Buffer {
  // 16-bit RGBA. Each row: filter byte 0, then width x 8 zero bytes.
  return pngOf(width, height, { bitDepth: 16, colourType: 6 }, deflateSync(Buffer.alloc((1 + width * 8) * height), { level: 9 }));
}
