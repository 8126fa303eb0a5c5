// Listing baseline: the framework ceiling. A NestJS app on the same stack (platform-express, same
// versions) with one controller that answers a small JSON object, and nothing else: no guards,
// interceptors, logging, database or validation. Decorators applied by hand, so no build step.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

class PingController {
  ping() {
    return { success: true, data: { ok: true } };
  }
}
Reflect.decorate([Get('ping')], PingController.prototype, 'ping', Object.getOwnPropertyDescriptor(PingController.prototype, 'ping'));
Reflect.decorate([Controller('v1')], PingController);

class BareModule {}
Reflect.decorate([Module({ controllers: [PingController] })], BareModule);

const app = await NestFactory.create(BareModule, { logger: ['error', 'warn'] });
await app.listen(0, '127.0.0.1');
process.stdout.write(`LISTENING ${app.getHttpServer().address().port}\n`);
