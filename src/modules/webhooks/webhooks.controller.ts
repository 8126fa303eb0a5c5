import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import { ApiCallingKeyRevokedMeanwhile, ApiEnvelope, ApiErrors } from '../../common/http/openapi.js';
import { PageRequest } from '../../common/http/pagination.request.js';
import { CreateWebhookCommand } from './commands/create-webhook.command.js';
import { DeleteWebhookCommand } from './commands/delete-webhook.command.js';
import { RedeliverCommand } from './commands/redeliver.command.js';
import { RotateWebhookSecretCommand } from './commands/rotate-webhook-secret.command.js';
import { ReplayEventsCommand } from './commands/replay-events.command.js';
import { SendTestEventCommand } from './commands/send-test-event.command.js';
import { UpdateWebhookCommand } from './commands/update-webhook.command.js';
import { DeliveryResponse } from './dto/delivery.response.js';
import { CreateWebhookRequest } from './dto/create-webhook.request.js';
import { ListDeliveriesRequest } from './dto/list-deliveries.request.js';
import { RotateWebhookSecretRequest } from './dto/rotate-webhook-secret.request.js';
import { ReplayQueuedResponse, ReplayWebhookRequest } from './dto/replay-webhook.request.js';
import { UpdateWebhookRequest } from './dto/update-webhook.request.js';
import { CreatedWebhookResponse, DeletedWebhookResponse, RotatedWebhookSecretResponse, WebhookResponse } from './dto/webhook.response.js';
import { GetDeliveryQuery } from './queries/get-delivery.query.js';
import { GetWebhookQuery } from './queries/get-webhook.query.js';
import { ListDeliveriesQuery } from './queries/list-deliveries.query.js';
import { ListWebhooksQuery } from './queries/list-webhooks.query.js';

const NOT_FOUND: [number, string] = [404, 'not_found: no such webhook in this account.'];
const UNREADABLE_SECRET: [number, string] = [409, 'conflict: the webhook\'s secret cannot be decrypted (SECRETS_ENCRYPTION_KEY changed); rotate its secret.'];

@ApiTags('Webhooks')
@Controller('v1/webhooks')
@RequireScope(null, { elevated: true })
export class WebhooksController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'createWebhook',
    summary: 'Create a webhook',
    description:
      'Registers an https endpoint for some of the seven events. The `secret` (generated when omitted, `whsec_` + base64 of 32 bytes) is in this answer only. ' +
      'At most 25 webhooks per account. Each delivery is signed twice: `X-Service-Signature` (`sha256=` hex HMAC of the raw body, keyed with the secret string) ' +
      'and the Standard Webhooks headers `webhook-id` (the event id), `webhook-timestamp` and `webhook-signature`, which the `standardwebhooks` libraries verify.',
  })
  @ApiEnvelope(CreatedWebhookResponse, { status: 201 })
  @ApiErrors([400, 'invalid_request: bad url (not https, private address, unresolvable), unknown event names, or the 26th webhook.'])
  @ApiCallingKeyRevokedMeanwhile('webhook')
  create(@CurrentActor() actor: Actor, @Body() body: CreateWebhookRequest): Promise<CreatedWebhookResponse> {
    return this.commands.execute(new CreateWebhookCommand(actor, body));
  }

  @Get()
  @ApiOperation({ operationId: 'listWebhooks', summary: 'List webhooks', description: 'Oldest first, without secrets; `disabled_reason` says when the service turned one off.' })
  @ApiEnvelope(WebhookResponse, { list: true })
  @ApiErrors([400, 'invalid_request: bad page or per_page.'])
  list(@CurrentActor() actor: Actor, @Query() page: PageRequest) {
    return this.queries.execute(new ListWebhooksQuery(actor, page));
  }

  @Get(':webhook_id')
  @ApiOperation({ operationId: 'getWebhook', summary: 'Get a webhook' })
  @ApiEnvelope(WebhookResponse)
  @ApiErrors(NOT_FOUND)
  get(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string): Promise<WebhookResponse> {
    return this.queries.execute(new GetWebhookQuery(actor, webhookId));
  }

  @Patch(':webhook_id')
  @ApiOperation({ operationId: 'updateWebhook', summary: 'Update a webhook', description: 'Replaces `events` and/or sets `active`. Activating clears an automatic deactivation.' })
  @ApiEnvelope(WebhookResponse)
  @ApiErrors([400, 'invalid_request: unknown event names, or neither events nor active given.'], NOT_FOUND)
  update(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string, @Body() body: UpdateWebhookRequest): Promise<WebhookResponse> {
    return this.commands.execute(new UpdateWebhookCommand(actor, webhookId, body));
  }

  @Delete(':webhook_id')
  @HttpCode(200)
  @ApiOperation({ operationId: 'deleteWebhook', summary: 'Delete a webhook', description: 'Deletes the webhook and its delivery log; attempts still queued are dropped.' })
  @ApiEnvelope(DeletedWebhookResponse)
  @ApiErrors(NOT_FOUND)
  delete(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string): Promise<DeletedWebhookResponse> {
    return this.commands.execute(new DeleteWebhookCommand(actor, webhookId));
  }

  @Post(':webhook_id/test')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'testWebhook',
    summary: 'Send a test event',
    description: 'Queues a `webhook.test` event with `data: {message}` to this webhook (also when it is inactive) and answers the delivery record.',
  })
  @ApiEnvelope(DeliveryResponse, { status: 202 })
  @ApiErrors(NOT_FOUND, UNREADABLE_SECRET)
  test(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string): Promise<DeliveryResponse> {
    return this.commands.execute(new SendTestEventCommand(actor, webhookId));
  }

  @Post(':webhook_id/rotate-secret')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the signing secret',
    description:
      'Generates a new secret, shown in this answer only. For `expires_in` seconds (default 86400) deliveries are signed with both: ' +
      '`webhook-signature` carries a `v1,` signature for each (new first), `X-Service-Signature` uses the new secret. Then only the new one signs.',
  })
  @ApiEnvelope(RotatedWebhookSecretResponse)
  @ApiErrors([400, 'invalid_request: expires_in is not an integer from 0 to 604800.'], NOT_FOUND)
  rotateSecret(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string, @Body() body: RotateWebhookSecretRequest): Promise<RotatedWebhookSecretResponse> {
    return this.commands.execute(new RotateWebhookSecretCommand(actor, webhookId, body));
  }

  @Get(':webhook_id/deliveries')
  @ApiOperation({ operationId: 'listWebhookDeliveries', summary: 'Delivery log', description: 'Deliveries of this webhook, newest first, each with its attempts.' })
  @ApiEnvelope(DeliveryResponse, { list: 'cursor' })
  @ApiErrors([400, 'invalid_request: bad page, per_page or status; a cursor together with page, altered, or made for another query.'], NOT_FOUND)
  deliveries(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string, @Query() request: ListDeliveriesRequest) {
    return this.queries.execute(new ListDeliveriesQuery(actor, webhookId, request));
  }

  @Get(':webhook_id/deliveries/:delivery_id')
  @ApiOperation({ operationId: 'getWebhookDelivery', summary: 'One delivery' })
  @ApiEnvelope(DeliveryResponse)
  @ApiErrors([404, 'not_found: no such webhook or delivery in this account.'])
  delivery(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string, @Param('delivery_id') deliveryId: string): Promise<DeliveryResponse> {
    return this.queries.execute(new GetDeliveryQuery(actor, webhookId, deliveryId));
  }

  @Post(':webhook_id/deliveries/:delivery_id/redeliver')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'redeliverWebhookDelivery',
    summary: 'Redeliver',
    description:
      'Starts a new series of up to three attempts for a delivery that succeeded or failed, with the same delivery id and body. ' +
      'A replay delivery cannot be redelivered while another replay delivery of its event to this webhook is pending. ' +
      'An inactive webhook is sent nothing: activate it first.',
  })
  @ApiEnvelope(DeliveryResponse, { status: 202 })
  @ApiErrors(
    [404, 'not_found: no such webhook or delivery in this account.'],
    [409, 'conflict: the webhook is inactive (activate it first), its secret cannot be decrypted (SECRETS_ENCRYPTION_KEY changed; rotate its secret), the delivery is still being attempted, or it is a replay delivery and another replay delivery of its event to this webhook is.'],
  )
  redeliver(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string, @Param('delivery_id') deliveryId: string): Promise<DeliveryResponse> {
    return this.commands.execute(new RedeliverCommand(actor, webhookId, deliveryId));
  }

  @Post(':webhook_id/replay')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'replayWebhook',
    summary: 'Replay events',
    description:
      'Queues a new delivery (new delivery id, same event id, the usual attempts and log) of every retained event in [since, until) ' +
      'that this webhook subscribes to, and answers how many. Large windows are queued in the background. Events still waiting in an ' +
      'earlier replay to this webhook are not queued (or counted) again. An inactive webhook is sent nothing: a replay to one is refused ' +
      '(activate it first), and a replay under way stops making deliveries once its webhook is switched off.',
  })
  @ApiEnvelope(ReplayQueuedResponse, { status: 202 })
  @ApiErrors(
    [400, 'invalid_request: since or until not an RFC 3339 date-time with a time zone (details.fields names which), or since not before until.'],
    NOT_FOUND,
    [409, `${UNREADABLE_SECRET[1]} Or the webhook is inactive: activate it first.`],
  )
  replay(@CurrentActor() actor: Actor, @Param('webhook_id') webhookId: string, @Body() body: ReplayWebhookRequest): Promise<ReplayQueuedResponse> {
    return this.commands.execute(new ReplayEventsCommand(actor, webhookId, body));
  }
}
