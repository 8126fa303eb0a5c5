import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import { ApiCallingKeyRevokedMeanwhile, ApiEnvelope, ApiErrors } from '../../common/http/openapi.js';
import { PageRequest } from '../../common/http/pagination.request.js';
import { CreateApiKeyCommand } from './commands/create-api-key.command.js';
import { RevokeApiKeyCommand } from './commands/revoke-api-key.command.js';
import { ApiKeyResponse, CreatedApiKeyResponse, RevokedApiKeyResponse } from './dto/api-key.response.js';
import { CreateApiKeyRequest } from './dto/create-api-key.request.js';
import { UserInfoResponse } from './dto/user-info.response.js';
import { GetUserInfoQuery } from './queries/get-user-info.query.js';
import { ListApiKeysQuery } from './queries/list-api-keys.query.js';

@ApiTags('Account')
@Controller('v1/user')
export class UserController {
  constructor(private readonly queries: QueryBus) {}

  @Get('info')
  @RequireScope('read')
  @ApiOperation({ operationId: 'getUserInfo', summary: 'Account information', description: 'The calling user, the account, its plan, storage use and limits, and the calling key.' })
  @ApiEnvelope(UserInfoResponse)
  userInfo(@CurrentActor() actor: Actor): Promise<UserInfoResponse> {
    return this.queries.execute(new GetUserInfoQuery(actor));
  }
}

@ApiTags('API keys')
@Controller('v1/api-keys')
export class ApiKeysController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @ApiCallingKeyRevokedMeanwhile('key')
  @RequireScope(null, { elevated: true })
  @ApiOperation({
    operationId: 'createApiKey',
    summary: 'Create an API key',
    description:
      'The secret `api_key` is in this answer only; it is stored as a hash. A key can grant no more than it holds: ' +
      'the new scopes must be a subset of the calling key\'s, and only an elevated key may grant `elevated: true`. ' +
      'An account holds at most 100 live keys; revoke one to make room.',
  })
  @ApiEnvelope(CreatedApiKeyResponse, { status: 201 })
  @ApiErrors(
    [
      400,
      'invalid_request: name, scopes or elevated is malformed, or the account already holds 100 live keys (`details.limit`; not kept for an ' +
        'Idempotency-Key, so a retry with the same key creates the key once one is revoked).',
    ],
    [403, 'permission_denied: a scope the calling key does not hold.'],
  )
  async create(@CurrentActor() actor: Actor, @Body() body: CreateApiKeyRequest): Promise<CreatedApiKeyResponse> {
    const { key, secret } = await this.commands.execute(new CreateApiKeyCommand(actor.accountId, actor.userId, body.name, body.scopes, body.elevated ?? false, actor));
    return CreatedApiKeyResponse.withSecret(key, secret);
  }

  @Get()
  @RequireScope(null, { elevated: true })
  @ApiOperation({ operationId: 'listApiKeys', summary: 'List API keys', description: 'Live keys of the account, newest first, without secrets.' })
  @ApiEnvelope(ApiKeyResponse, { list: true })
  @ApiErrors([400, 'invalid_request: bad page or per_page.'])
  list(@CurrentActor() actor: Actor, @Query() page: PageRequest) {
    return this.queries.execute(new ListApiKeysQuery(actor, page));
  }

  @Delete(':key_id')
  @HttpCode(200)
  @RequireScope(null, { elevated: true })
  @ApiOperation({
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key',
    description:
      'The key stops authenticating at once, in every server process. A key may revoke only keys whose scopes are a subset of its own, ' +
      'itself included: a key that revokes itself gets this answer, then 401 for every request, a retry of this one too.',
  })
  @ApiEnvelope(RevokedApiKeyResponse)
  @ApiErrors([403, 'permission_denied: the key holds a scope the calling key does not.'], [404, 'not_found: no live key with this id in the account.'])
  revoke(@CurrentActor() actor: Actor, @Param('key_id') keyId: string): Promise<RevokedApiKeyResponse> {
    return this.commands.execute(new RevokeApiKeyCommand(actor, keyId));
  }
}
