import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { NotRateLimited } from '../../common/rate-limit/plan-rate-limit.guard.js';
import { Redis } from 'ioredis';
import { Public } from '../../common/auth/access.decorator.js';
import { ApiEnvelope } from '../../common/http/openapi.js';
import { REDIS } from '../redis/redis.module.js';
import { BlobStorage } from '../storage/blob-storage.js';
import { scanningOf, VirusScanner } from '../../modules/media/scanning/virus-scanner.js';
import { MediaTools } from '../../modules/media/thumbnails/media-tools.js';

/** How long each dependency may take to answer before it counts as down. */
const CHECK_TIMEOUT_MS = 2000;

/** Terminus's report, in the success envelope like every other answer. */
class HealthReportResponse {
  @ApiProperty({ enum: ['ok'] }) status: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Each healthy indicator (database, redis, storage, media) with its details.' }) info: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Each failing indicator; empty when healthy.' }) error: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Every indicator.' }) details: Record<string, unknown>;
}

/** What the liveness route answers: the process runs and its event loop answers. */
class LivenessResponse {
  @ApiProperty({ enum: ['ok'] }) status: string;
}

@ApiTags('Operations')
@Controller('health')
@Public({ takesInput: false })
@NotRateLimited()
export class HealthController {
  /** The check under way, which requests arriving meanwhile share. */
  private running: ReturnType<HealthController['runChecks']> | null = null;

  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly mediaTools: MediaTools,
    private readonly scanner: VirusScanner,
    private readonly blobs: BlobStorage,
  ) {}

  @Get()
  // Documented here, not by Terminus: its schema lacks the envelope every answer is wrapped in.
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiEnvelope(HealthReportResponse)
  @ApiOperation({
    operationId: 'checkHealth',
    summary: 'Readiness: the dependencies answer',
    description:
      'Checks the database, Redis and the blob storage (`storage`), each within 2 seconds; 503 when one is down or does not answer in time: a ' +
      'readiness probe (take the process out of the load balancer), not a liveness one (restarting it cures no outage; see GET /health/live). `media` reports the optional thumbnail tools (ffmpeg, pdftoppm) and the virus ' +
      'scanner (clamd): always "up", because without them uploads and downloads still work; what is missing is named in its details. ' +
      '`media.virus_scanner.scanning` is "active" while clamd answers and "unavailable" otherwise: then new uploads are not scanned now ' +
      '(with no scanner set or found they are marked `scan_status` "skipped"; with one set, they wait as "pending").',
  })
  check() {
    // A public route that reaches four dependencies: requests that arrive while a check runs share it, so a flood of
    // them costs one check at a time, not a database query and a clamd connection each.
    this.running ??= this.runChecks().finally(() => (this.running = null));
    return this.running;
  }

  @Get('live')
  @ApiEnvelope(LivenessResponse)
  @ApiOperation({
    operationId: 'checkLiveness',
    summary: 'Liveness: the process answers',
    description:
      'Answers 200 while the server process runs and its event loop answers, whatever its dependencies do, and reaches none of them: for a ' +
      "liveness probe (Kubernetes' livenessProbe restarts a process whose probe fails). A database, Redis or storage outage is not cured by a " +
      'restart, so a probe of GET /health would restart every process during one.',
  })
  live(): LivenessResponse {
    return { status: 'ok' };
  }

  private runChecks() {
    return this.health.check([
      () => this.database.pingCheck('database', { timeout: CHECK_TIMEOUT_MS }),
      () => this.pingRedis(),
      () => this.checkStorage(),
      () => this.checkMedia(),
    ]);
  }

  /** Uploads and downloads need the blob store as much as the database: a store that is gone or hangs fails the check. */
  private async checkStorage() {
    const indicator = this.indicators.check('storage');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS)));
    try {
      await Promise.race([this.blobs.check(), deadline]);
      return indicator.up();
    } catch (error) {
      return indicator.down({ message: error instanceof Error ? error.message : String(error) });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Optional tools degrade background work (no video/PDF thumbnails, no scans), not the service: reported, never a 503. */
  private async checkMedia() {
    const [tools, scanner] = await Promise.all([this.mediaTools.status(), this.scanner.check()]);
    const degraded = !tools.ffmpeg.available || !tools.pdftoppm.available || !scanner.configured || scanner.reachable === false;
    return this.indicators.check('media').up({ degraded, ffmpeg: tools.ffmpeg, pdftoppm: tools.pdftoppm, virus_scanner: { scanning: scanningOf(scanner), ...scanner } });
  }

  private async pingRedis() {
    const indicator = this.indicators.check('redis');
    try {
      await this.redis.ping();
      return indicator.up();
    } catch (error) {
      return indicator.down({ message: error instanceof Error ? error.message : String(error) });
    }
  }
}
