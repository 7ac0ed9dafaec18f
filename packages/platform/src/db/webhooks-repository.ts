// Webhooks (issue #42): a user's endpoints, the events that tell a state change, and the outbox of deliveries.
// An event is recorded with `recordEvent` inside the transaction of the change it tells (a job's status update, an
// export's, a batch's), with one delivery per endpoint of the user subscribed to its type, and one to the operator's
// endpoint (WEBHOOK_URL) when the deployment has one; so no path that ends a job can end it without its event, and an
// event is never sent for a change that rolled back. Deliverers in any process claim due deliveries with SKIP LOCKED
// (two processes never send the same attempt) and record each attempt's outcome.
import { newId } from '../ids.ts';
import type { Database, Queryable } from './database.ts';

/** The endpoint id of the operator's WEBHOOK_URL, which has no row (its URL and secret are the deployment's). */
export const OPERATOR_ENDPOINT = 'operator';

export interface WebhookEndpointRow {
  endpoint_id: string;
  user_id: string;
  name: string;
  url: string;
  event_types: string[];
  /** Sealed (SealedSecrets.sealValue, the endpoint id as owner). */
  secret: string;
  secret_hint: string;
  old_secret: string | null;
  old_secret_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookEventRow {
  event_id: string;
  user_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookDeliveryRow {
  delivery_id: string;
  event_id: string;
  endpoint_id: string;
  user_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date;
  claimed_until: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A claimed delivery with its event. */
export interface DueDelivery extends WebhookDeliveryRow {
  type: string;
  data: Record<string, unknown>;
  event_created_at: Date;
}

export type NewEndpoint = Pick<WebhookEndpointRow, 'endpoint_id' | 'user_id' | 'name' | 'url' | 'event_types' | 'secret' | 'secret_hint'>;
export type EndpointUpdate = Partial<Pick<WebhookEndpointRow, 'name' | 'url' | 'event_types'>>;

export class WebhooksRepository {
  /** `operator`: the deployment has a WEBHOOK_URL, which gets every event. */
  constructor(
    private readonly db: Database,
    private readonly operator: boolean,
  ) {}

  async insertEndpoint(row: NewEndpoint): Promise<WebhookEndpointRow> {
    const [created] = await this.db.query<WebhookEndpointRow>(
      `INSERT INTO webhook_endpoints (endpoint_id, user_id, name, url, event_types, secret, secret_hint)
       VALUES ($1, $2, $3, $4, $5::json, $6, $7) RETURNING *`,
      [row.endpoint_id, row.user_id, row.name, row.url, JSON.stringify(row.event_types), row.secret, row.secret_hint],
    );
    return created!;
  }

  async getEndpoint(userId: string, endpointId: string): Promise<WebhookEndpointRow | undefined> {
    const [row] = await this.db.query<WebhookEndpointRow>('SELECT * FROM webhook_endpoints WHERE user_id = $1 AND endpoint_id = $2', [userId, endpointId]);
    return row;
  }

  /** Deliverer side: the endpoint a delivery names, whoever owns it. */
  async endpointForDelivery(endpointId: string): Promise<WebhookEndpointRow | undefined> {
    const [row] = await this.db.query<WebhookEndpointRow>('SELECT * FROM webhook_endpoints WHERE endpoint_id = $1', [endpointId]);
    return row;
  }

  /** Newest first. */
  async listEndpoints(userId: string): Promise<WebhookEndpointRow[]> {
    return this.db.query<WebhookEndpointRow>('SELECT * FROM webhook_endpoints WHERE user_id = $1 ORDER BY created_at DESC, endpoint_id DESC', [userId]);
  }

  /** Changes what is set; updated_at moves only when something changed. */
  async updateEndpoint(userId: string, endpointId: string, update: EndpointUpdate): Promise<WebhookEndpointRow | undefined> {
    const [row] = await this.db.query<WebhookEndpointRow>(
      `UPDATE webhook_endpoints SET
         name = coalesce($3, name), url = coalesce($4, url), event_types = coalesce($5::json, event_types),
         updated_at = CASE WHEN ($3::text IS NULL OR $3 = name) AND ($4::text IS NULL OR $4 = url)
                            AND ($5::text IS NULL OR $5::jsonb = event_types::jsonb) THEN updated_at ELSE now() END
       WHERE user_id = $1 AND endpoint_id = $2 RETURNING *`,
      [userId, endpointId, update.name ?? null, update.url ?? null, update.event_types ? JSON.stringify(update.event_types) : null],
    );
    return row;
  }

  /** A new secret; the previous one goes on signing beside it until `keepOldUntil` (none: it stops at once). */
  async rotateSecret(userId: string, endpointId: string, secret: string, hint: string, keepOldUntil: Date | null): Promise<WebhookEndpointRow | undefined> {
    const [row] = await this.db.query<WebhookEndpointRow>(
      `UPDATE webhook_endpoints SET old_secret = CASE WHEN $5::timestamptz IS NULL THEN NULL ELSE secret END, old_secret_until = $5,
         secret = $3, secret_hint = $4, updated_at = now()
       WHERE user_id = $1 AND endpoint_id = $2 RETURNING *`,
      [userId, endpointId, secret, hint, keepOldUntil],
    );
    return row;
  }

  /** Removes the endpoint; its deliveries not yet made are dropped with it. */
  async deleteEndpoint(userId: string, endpointId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query('DELETE FROM webhook_endpoints WHERE user_id = $1 AND endpoint_id = $2 RETURNING endpoint_id', [userId, endpointId]);
      if (rows.length > 0) await tx.query("DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'", [endpointId]);
      return rows.length > 0;
    });
  }

  /** Records an event of `userId` in `tx` (the transaction of the change it tells), with its deliveries. */
  async recordEvent(tx: Queryable, userId: string, type: string, data: Record<string, unknown>): Promise<WebhookEventRow> {
    const [event] = await tx.query<WebhookEventRow>('INSERT INTO webhook_events (event_id, user_id, type, data) VALUES ($1, $2, $3, $4::json) RETURNING *', [
      newId('evt'),
      userId,
      type,
      JSON.stringify(data),
    ]);
    const endpoints = await tx.query<{ endpoint_id: string }>(
      'SELECT endpoint_id FROM webhook_endpoints WHERE user_id = $1 AND event_types::jsonb ? $2 ORDER BY created_at',
      [userId, type],
    );
    const targets = [...endpoints.map((e) => e.endpoint_id), ...(this.operator ? [OPERATOR_ENDPOINT] : [])];
    for (const endpointId of targets) {
      await tx.query('INSERT INTO webhook_deliveries (delivery_id, event_id, endpoint_id, user_id) VALUES ($1, $2, $3, $4)', [newId('whd'), event!.event_id, endpointId, userId]);
    }
    return event!;
  }

  /** Takes up to `limit` due deliveries for `leaseSeconds` (counting the attempt); others skip what one holds. */
  async claimDue(limit: number, leaseSeconds: number): Promise<DueDelivery[]> {
    return this.db.query<DueDelivery>(
      `WITH due AS (
         SELECT delivery_id FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
         ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       UPDATE webhook_deliveries d SET claimed_until = now() + make_interval(secs => $2), attempts = d.attempts + 1, updated_at = now()
       FROM due, webhook_events e
       WHERE d.delivery_id = due.delivery_id AND e.event_id = d.event_id
       RETURNING d.*, e.type, e.data, e.created_at AS event_created_at`,
      [limit, leaseSeconds],
    );
  }

  /** An attempt's outcome: delivered, or tried again at `retryAt` (none: failed for good). */
  async recordAttempt(deliveryId: string, outcome: { delivered: boolean; statusCode: number | null; error: string | null; retryAt: Date | null }): Promise<void> {
    const status: DeliveryStatus = outcome.delivered ? 'delivered' : outcome.retryAt ? 'pending' : 'failed';
    await this.db.query(
      `UPDATE webhook_deliveries SET status = $2, last_status_code = $3, last_error = $4, next_attempt_at = coalesce($5, next_attempt_at),
         delivered_at = CASE WHEN $2 = 'delivered' THEN now() ELSE delivered_at END, claimed_until = NULL, updated_at = now()
       WHERE delivery_id = $1`,
      [deliveryId, status, outcome.statusCode, outcome.error, outcome.retryAt],
    );
  }

  /** Deliveries not yet delivered nor given up, and how long the oldest of them has waited since its event. */
  async pendingSummary(): Promise<{ count: number; oldestSeconds: number }> {
    const [row] = await this.db.query<{ count: number; oldest_seconds: number | null }>(
      `SELECT count(*)::int AS count, extract(epoch FROM now() - min(created_at))::float8 AS oldest_seconds FROM webhook_deliveries WHERE status = 'pending'`,
    );
    return { count: row?.count ?? 0, oldestSeconds: row?.oldest_seconds ?? 0 };
  }

  /** Forgets deliveries that ended (delivered, or failed after their last attempt) over `days` ago, and the events
   *  left with none; a pending delivery is kept whatever its age. Returns how many deliveries went. */
  async prune(days: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const gone = await tx.query(
        `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < now() - make_interval(days => $1) RETURNING delivery_id`,
        [days],
      );
      await tx.query(
        `DELETE FROM webhook_events e WHERE e.created_at < now() - make_interval(days => $1)
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.event_id)`,
        [days],
      );
      return gone.length;
    });
  }

  /** An endpoint's deliveries, newest first, with their events' types. */
  async deliveries(userId: string, endpointId: string, limit = 100): Promise<Array<WebhookDeliveryRow & { type: string }>> {
    return this.db.query(
      `SELECT d.*, e.type FROM webhook_deliveries d JOIN webhook_events e ON e.event_id = d.event_id
       WHERE d.user_id = $1 AND d.endpoint_id = $2 ORDER BY d.created_at DESC, d.delivery_id DESC LIMIT $3`,
      [userId, endpointId, limit],
    );
  }

  /** Sends a delivery again now (a manual redelivery), whatever its status, with its event's type; undefined when it
   *  is not a delivery of the user's endpoint. */
  async redeliver(userId: string, endpointId: string, deliveryId: string): Promise<(WebhookDeliveryRow & { type: string }) | undefined> {
    const [row] = await this.db.query<WebhookDeliveryRow & { type: string }>(
      `UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now(), claimed_until = NULL, updated_at = now()
       FROM webhook_events e
       WHERE d.user_id = $1 AND d.endpoint_id = $2 AND d.delivery_id = $3 AND e.event_id = d.event_id
       RETURNING d.*, e.type`,
      [userId, endpointId, deliveryId],
    );
    return row;
  }
}
