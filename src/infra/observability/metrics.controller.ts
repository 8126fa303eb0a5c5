import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { NotRateLimited } from '../../common/rate-limit/plan-rate-limit.guard.js';
import type { Response } from 'express';
import { Public } from '../../common/auth/access.decorator.js';
import { MetricsCollector } from './metrics-collector.js';
import { Metrics } from './metrics.js';

/** Prometheus scrape endpoint, outside /v1 and the API envelope. */
@ApiExcludeController()
@Controller('metrics')
@Public()
@NotRateLimited()
export class MetricsController {
  constructor(
    private readonly metrics: Metrics,
    private readonly collector: MetricsCollector,
  ) {}

  @Get()
  async scrape(@Res() response: Response): Promise<void> {
    await this.collector.refresh();
    response.setHeader('Content-Type', this.metrics.registry.contentType);
    response.setHeader('Cache-Control', 'no-store');
    response.send(await this.metrics.registry.metrics());
  }
}
