import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Not, Repository } from 'typeorm';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { NotFound } from '../../../common/errors/api-error.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { FileResponse } from '../dto/file.response.js';
import { FileEntity } from '../file.entity.js';
import { sharedFileIds } from '../../shares/live-shares.js';

export class GetFileQuery extends Query<FileResponse> {
  constructor(
    readonly actor: Actor,
    readonly fileId: string,
  ) {
    super();
  }
}

/** One active file of the caller's account; trashed, quarantined and other accounts' files are not found. */
@QueryHandler(GetFileQuery)
export class GetFileHandler implements IQueryHandler<GetFileQuery> {
  constructor(
    @InjectRepository(FileEntity) private readonly files: Repository<FileEntity>,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
  ) {}

  async execute({ actor, fileId }: GetFileQuery): Promise<FileResponse> {
    const file = await this.files.findOneBy({ id: fileId, accountId: actor.accountId, state: 'active', scanStatus: Not('infected') });
    if (!file) throw new NotFound('file', fileId);
    const now = this.clock.now();
    const shared = await sharedFileIds(this.files.manager, [file.id], now);
    return FileResponse.from(file, this.signer, now, { isShared: shared.has(file.id) });
  }
}
