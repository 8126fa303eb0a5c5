import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { runTool } from './run-tool.js';

export interface ToolStatus {
  available: boolean;
  /** The first line the tool prints about its version, when available. */
  version?: string;
  /** What goes without it. */
  needed_for: string;
}

/** Re-checking on every /health call would spawn processes per probe; a minute is fresh enough. */
const CACHE_MS = 60_000;

/**
 * Which optional system tools this machine has. Images need nothing (sharp bundles libvips); video
 * thumbnails need ffmpeg and PDF thumbnails poppler's pdftoppm. Without them those thumbnails fail,
 * everything else works.
 */
@Injectable()
export class MediaTools {
  private cached: { at: number; tools: Promise<Record<'ffmpeg' | 'pdftoppm', ToolStatus>> } | undefined;

  constructor(private readonly config: AppConfig) {}

  status(): Promise<Record<'ffmpeg' | 'pdftoppm', ToolStatus>> {
    if (!this.cached || Date.now() - this.cached.at > CACHE_MS) {
      this.cached = { at: Date.now(), tools: this.probe() };
    }
    return this.cached.tools;
  }

  private async probe(): Promise<Record<'ffmpeg' | 'pdftoppm', ToolStatus>> {
    const [ffmpeg, pdftoppm] = await Promise.all([
      this.probeTool(this.config.media.ffmpegPath, ['-version'], 'video thumbnails'),
      this.probeTool(this.config.media.pdftoppmPath, ['-v'], 'PDF thumbnails'),
    ]);
    return { ffmpeg, pdftoppm };
  }

  private async probeTool(command: string, args: string[], neededFor: string): Promise<ToolStatus> {
    try {
      // pdftoppm -v prints its version to stderr and exits 0 (99 on old poppler); both mean it runs.
      const output = await runTool('sh', ['-c', '"$0" "$@" 2>&1; code=$?; [ $code -eq 127 ] || [ $code -eq 126 ] && exit $code; exit 0', command, ...args], {
        timeoutMs: 5_000,
        memoryMb: 1024,
        maxOutputBytes: 1024 * 1024,
      });
      return { available: true, version: output.toString('utf8').split('\n')[0].trim().slice(0, 120), needed_for: neededFor };
    } catch {
      return { available: false, needed_for: neededFor };
    }
  }
}
