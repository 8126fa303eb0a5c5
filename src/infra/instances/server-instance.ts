import { Injectable } from '@nestjs/common';
import { newId } from '../../common/ids.js';

/**
 * This process's identity. Work a process owns while it runs (an upload streaming in) is tagged
 * with it, so that once the process is known to be dead (see InstanceHeartbeat) others can reclaim
 * that work at once instead of waiting for it to look stale.
 */
@Injectable()
export class ServerInstance {
  readonly id = newId('srv');
}
