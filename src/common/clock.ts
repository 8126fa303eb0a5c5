import { Injectable } from '@nestjs/common';

/** The current time, injected so retention and expiry rules can be tested without waiting. */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}
