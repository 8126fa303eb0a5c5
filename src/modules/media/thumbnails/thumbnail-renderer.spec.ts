import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { hugeDeclaredPng, jpegImage, mp4Video, onePagePdf, pngImage, svgEmbeddingHugePng, widePng } from '../../../../test/support/media.js';
import { loadConfig } from '../../../config/app-config.js';
import { ThumbnailRenderer, UnusableMediaError } from './thumbnail-renderer.js';

const dir = mkdtempSync(join(tmpdir(), 'fss-render-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function onDisk(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

const renderer = (env: Record<string, string> = {}) => new ThumbnailRenderer(loadConfig({ NODE_ENV: 'test', ...env }));

async function expectThumbnail(webp: Buffer, width: number, height: number) {
  const meta = await sharp(webp).metadata();
  expect(meta.format).toBe('webp');
  expect([meta.width, meta.height]).toEqual([width, height]);
}

// The renderers start ffmpeg and pdftoppm, which a loaded machine (the suite runs files side by side) can hold up past
// the unit tests' default 5 s: correctness is judged here, not speed.
describe('ThumbnailRenderer', { timeout: 30_000 }, () => {
  it('fits a landscape JPEG into the 256 px box, keeping its aspect ratio', async () => {
    await expectThumbnail(await renderer().render('image', onDisk('a.jpg', await jpegImage(800, 600))), 256, 192);
  });

  it('does not enlarge a small PNG', async () => {
    await expectThumbnail(await renderer().render('image', onDisk('small.png', await pngImage(100, 50))), 100, 50);
  });

  it('renders WebP and GIF input', async () => {
    const webp = await sharp({ create: { width: 300, height: 600, channels: 3, background: '#0f0' } }).webp().toBuffer();
    const gif = await sharp({ create: { width: 512, height: 512, channels: 3, background: '#00f' } }).gif().toBuffer();
    await expectThumbnail(await renderer().render('image', onDisk('p.webp', webp)), 128, 256);
    await expectThumbnail(await renderer().render('image', onDisk('p.gif', gif)), 256, 256);
  });

  it('renders AVIF input', async () => {
    const avif = await sharp({ create: { width: 400, height: 400, channels: 3, background: '#f80' } }).avif().toBuffer();
    await expectThumbnail(await renderer().render('image', onDisk('p.avif', avif)), 256, 256);
  });

  it('takes a frame from a video with ffmpeg', async () => {
    await expectThumbnail(await renderer().render('video', onDisk('clip.mp4', mp4Video(2))), 256, 192);
  });

  it('takes the first frame of a video shorter than a second', async () => {
    await expectThumbnail(await renderer().render('video', onDisk('short.mp4', mp4Video(0.5))), 256, 192);
  });

  it('renders the first page of a PDF with pdftoppm', async () => {
    const meta = await sharp(await renderer().render('pdf', onDisk('doc.pdf', onePagePdf()))).metadata();
    expect(meta.format).toBe('webp');
    expect(meta.height).toBe(256);
    expect(meta.width).toBeGreaterThan(170);
    expect(meta.width).toBeLessThan(190);
  });

  it('refuses an image declaring 100000 x 100000 pixels at once, without decoding it', async () => {
    // Refused on the declared size; its time and memory are measured in `npm run bench`, not here.
    await expect(renderer().render('image', onDisk('bomb.png', hugeDeclaredPng()))).rejects.toThrow(/pixel limit/i);
  });

  it('refuses small files declaring images that must be decoded whole into GBs, before decoding them', async () => {
    // Within the pixel limit, but a GIF frame, an interlaced PNG and an AVIF are decoded whole, not in strips: at
    // 10000 x 10000 (8000 x 8000 for the AVIF) they made the server process grow by 0.5, 0.9 and 1.2 GB per thumbnail.
    const canvas = (width: number, height: number, channels: 3 | 4 = 3) => sharp({ create: { width, height, channels, background: '#369' } });
    const gif = await canvas(9_000, 9_000).gif().toBuffer();
    const interlaced = await canvas(6_000, 6_000, 4).toColourspace('rgb16').png({ progressive: true, compressionLevel: 9 }).toBuffer();
    const avif = await canvas(4_000, 4_000).avif({ effort: 0 }).toBuffer();
    expect(Math.max(gif.length, interlaced.length, avif.length)).toBeLessThan(2 * 1024 * 1024);
    for (const [name, bytes, what] of [['bomb.gif', gif, 'GIF'], ['bomb.png', interlaced, 'interlaced PNG'], ['bomb.avif', avif, 'HEIF/AVIF image']] as const) {
      const refused = renderer().render('image', onDisk(name, bytes));
      await expect(refused).rejects.toBeInstanceOf(UnusableMediaError);
      await expect(refused).rejects.toThrow(new RegExp(`${what} must be decoded whole.*THUMBNAIL_MAX_DECODE_MB \\(256\\)`));
    }
    // Photos of ordinary sizes in those formats still get their thumbnails.
    await expectThumbnail(await renderer().render('image', onDisk('photo.jpg', await canvas(4032, 3024).jpeg({ progressive: true }).toBuffer())), 256, 192);
    await expectThumbnail(await renderer().render('image', onDisk('photo.gif', await canvas(4000, 3000).gif().toBuffer())), 256, 192);
  }, 60_000);

  it('renders SVG, reading no file beside it or elsewhere', async () => {
    // A picture elsewhere on the server (another account's blob, say), named by path and by file: URL. (librsvg reads
    // files beside the SVG or below it; the job's SVG lies alone in its private work dir.)
    const elsewhere = join(mkdtempSync(join(dir, 'elsewhere-')), 'secret.png');
    writeFileSync(elsewhere, await pngImage(400, 400));
    mkdirSync(join(dir, 'job'));
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200"><rect width="400" height="200" fill="#fff"/>` +
      `<image href="file://${elsewhere}" width="400" height="200"/><image href="${elsewhere}" width="400" height="200"/></svg>`;
    const webp = await renderer().render('image', onDisk('job/drawing.svg', Buffer.from(svg)));
    await expectThumbnail(webp, 256, 128);
    // All white: the red secret was not drawn.
    const { channels } = await sharp(webp).stats();
    expect(channels.slice(0, 3).map((channel) => channel.min)).toEqual([255, 255, 255]);
  });

  it('holds an SVG to THUMBNAIL_TOOL_MEMORY_MB: one whose embedded picture needs more fails cleanly, in its child', async () => {
    // The embedded 10000 x 10000 PNG takes about 1.1 GB decoded; under 1024 MB the child dies and the render fails.
    const refused = renderer({ THUMBNAIL_TOOL_MEMORY_MB: '1024' }).render('image', onDisk('bomb.svg', await svgEmbeddingHugePng()));
    await expect(refused).rejects.toBeInstanceOf(UnusableMediaError);
    await expect(refused).rejects.toThrow(/cannot render the SVG within THUMBNAIL_TOOL_MEMORY_MB \(1024\).*the SVG renderer failed/);
  });

  it('refuses a small TIFF whose tiles must be held a row at a time beyond THUMBNAIL_MAX_DECODE_MB, and renders ordinary tiled TIFFs', async () => {
    // 24000 x 4096 in 4096 px tiles (libvips's largest): under 0.5 MB of file, it grew the process by 0.5 GB, the tiles
    // of a row being decoded whole. Strips stream, and so do tiles of ordinary sizes.
    const canvas = (width: number, height: number) => sharp({ create: { width, height, channels: 4, background: '#369f' } });
    for (const bigtiff of [false, true]) {
      const bomb = await canvas(24_000, 4_096).tiff({ tile: true, tileWidth: 4096, tileHeight: 4096, compression: 'deflate', bigtiff }).toBuffer();
      expect(bomb.length).toBeLessThan(1024 * 1024);
      const refused = renderer().render('image', onDisk(`tiles-${bigtiff}.tif`, bomb));
      await expect(refused).rejects.toBeInstanceOf(UnusableMediaError);
      await expect(refused).rejects.toThrow(/24000 x 4096 TIFF in 4096 x 4096 tiles must be decoded a row of tiles at a time.*THUMBNAIL_MAX_DECODE_MB \(256\)/);
    }
    const tiled = await canvas(8_000, 6_000).tiff({ tile: true, tileWidth: 512, tileHeight: 512, compression: 'deflate' }).toBuffer();
    await expectThumbnail(await renderer().render('image', onDisk('tiled.tif', tiled)), 256, 192);
    const strips = await canvas(8_000, 6_000).tiff({ compression: 'deflate', bigtiff: true }).toBuffer();
    await expectThumbnail(await renderer().render('image', onDisk('strips.tif', strips)), 256, 192);
  });

  it('refuses a very wide image whose rows, streamed, need more than THUMBNAIL_MAX_DECODE_MB, and renders panoramas', async () => {
    // Within the pixel limit, but libvips holds a couple of hundred rows of the full width while it streams: 78 KB of
    // 1,000,000 x 10 PNG grew the process by 1.5 GB, 0.8 MB of 25,000,000 x 4 had it killed for memory.
    for (const [width, height] of [[1_000_000, 10], [65_535, 1_525]]) {
      const refused = renderer().render('image', onDisk(`wide-${width}.png`, widePng(width, height)));
      await expect(refused).rejects.toBeInstanceOf(UnusableMediaError);
      await expect(refused).rejects.toThrow(new RegExp(`the ${width} x ${height} image is streamed .* rows at a time, needing about \\d+ MB, more than THUMBNAIL_MAX_DECODE_MB \\(256\\)`));
    }
    await expectThumbnail(await renderer().render('image', onDisk('panorama.png', widePng(30_000, 3_000))), 256, 26);
    await expectThumbnail(await renderer().render('image', onDisk('panorama.jpg', await jpegImage(40_000, 2_000))), 256, 13);
  });

  it('fails cleanly on a truncated JPEG and on bytes that are no image at all', async () => {
    const jpeg = await jpegImage(800, 600);
    await expect(renderer().render('image', onDisk('cut.jpg', jpeg.subarray(0, jpeg.length / 2)))).rejects.toBeInstanceOf(UnusableMediaError);
    await expect(renderer().render('image', onDisk('junk.png', Buffer.from('not an image')))).rejects.toBeInstanceOf(UnusableMediaError);
  });

  it('fails cleanly on a corrupt video and a corrupt PDF', async () => {
    const video = mp4Video(2);
    await expect(renderer().render('video', onDisk('cut.mp4', video.subarray(0, 200)))).rejects.toBeInstanceOf(UnusableMediaError);
    await expect(renderer().render('pdf', onDisk('bad.pdf', Buffer.from('%PDF-1.4\ngarbage')))).rejects.toBeInstanceOf(UnusableMediaError);
  });

  it('will not follow a playlist that points ffmpeg at other files', async () => {
    // An HLS playlist naming another local file: plain ffmpeg would happily render that file's frame.
    const elsewhere = onDisk('someone-elses.mp4', mp4Video(2));
    const playlist = onDisk('list.m3u8', Buffer.from(`#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n${elsewhere}\n#EXT-X-ENDLIST\n`));
    await expect(renderer().render('video', playlist)).rejects.toThrow(/not on whitelist/i);
  });

  it('says so when ffmpeg or pdftoppm is missing', async () => {
    const missing = renderer({ FFMPEG_PATH: '/nonexistent/ffmpeg', PDFTOPPM_PATH: '/nonexistent/pdftoppm' });
    await expect(missing.render('video', onDisk('v.mp4', mp4Video(1)))).rejects.toThrow(/ffmpeg is not installed/);
    await expect(missing.render('pdf', onDisk('d.pdf', onePagePdf()))).rejects.toThrow(/pdftoppm is not installed/);
  });
});
