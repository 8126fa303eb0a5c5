import { FileTooLarge } from '../../../common/errors/api-error.js';
import { PLANS, type PlanName } from '../../accounts/plans.js';

/**
 * The plan's maximum file size (inclusive), the one rule every upload path applies: to a declared request
 * length before any byte is read, and to the bytes counted while streaming.
 */
export class UploadSizeLimit {
  readonly maxSize: number;

  constructor(private readonly plan: PlanName) {
    this.maxSize = PLANS[plan].maxFileSize;
  }

  /** The refusal for `size` bytes of file, or null when they fit. */
  check(size: number): FileTooLarge | null {
    return size > this.maxSize ? new FileTooLarge(size, this.maxSize, this.plan) : null;
  }

  /**
   * The refusal for a request that declares `contentLength` bytes, of which up to `framing` may be other than
   * the file (multipart boundaries and fields); null when the file in it may still fit.
   */
  checkDeclared(contentLength: number, framing: number): FileTooLarge | null {
    return Number.isFinite(contentLength) && contentLength > this.maxSize + framing ? new FileTooLarge(contentLength, this.maxSize, this.plan) : null;
  }
}
