-- Webhooks (issue #42), as OpenAI sends them: a user's endpoints (/v1/webhook_endpoints), each with a signing secret
-- sealed with SECRETS_KEY (the endpoint's id as the owner; never expires, rotate_secret replaces it, the previous one
-- kept signing beside it until old_secret_until when asked); the events, written in the same transaction as the state
-- change they tell (a job, an export, a batch ending); and one delivery per event and endpoint subscribed to its type
-- (endpoint_id 'operator' for the deployment's WEBHOOK_URL): the outbox every process's deliverer claims rows of with
-- SKIP LOCKED, retried with backoff for over 24 hours.

CREATE TABLE webhook_endpoints (
  endpoint_id       text PRIMARY KEY,
  user_id           text NOT NULL,
  name              text NOT NULL,
  url               text NOT NULL,
  event_types       json NOT NULL,
  secret            text NOT NULL,
  secret_hint       text NOT NULL,
  old_secret        text,
  old_secret_until  timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_by_user ON webhook_endpoints (user_id, created_at);

CREATE TABLE webhook_events (
  event_id    text PRIMARY KEY,
  user_id     text NOT NULL,
  type        text NOT NULL,
  data        json NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
  delivery_id       text PRIMARY KEY,
  event_id          text NOT NULL REFERENCES webhook_events (event_id) ON DELETE CASCADE,
  endpoint_id       text NOT NULL,
  user_id           text NOT NULL,
  status            text NOT NULL DEFAULT 'pending',
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  claimed_until     timestamptz,
  last_status_code  integer,
  last_error        text,
  delivered_at      timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at);
