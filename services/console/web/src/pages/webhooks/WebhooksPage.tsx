// Webhooks (#42): the caller's endpoints (/v1/webhook_endpoints), added with the event types they get (the signing
// secret shown once, to copy), a sample event sent on request with what the endpoint answered, the deliveries of each
// with their attempts and last answer (sent again on request), the secret rotated, the endpoint removed.
import { useState, type FormEvent } from 'react';
import { Alert, Badge, Button, Card, Code, Group, MultiSelect, NativeSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { api } from '../../api/client.ts';
import type { WebhookDeliveryList, WebhookEndpoint, WebhookEndpointList, WebhookEndpointTestResult, WebhookEndpointWithSecret, WebhookEventTypeList } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ConfirmButton } from '../../components/ConfirmButton.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';
import { formatTime } from '../../components/format.ts';
import { ScrollTable } from '../../components/ScrollTable.tsx';

const STATUS_COLOR = { pending: 'yellow', delivered: 'green', failed: 'red' } as const;
const unix = (seconds: number | null) => (seconds === null ? '–' : formatTime(new Date(seconds * 1000).toISOString()));

/** The secret just made (at create or rotate): shown once, here. */
function SecretShown({ endpoint, onClose }: { endpoint: WebhookEndpointWithSecret; onClose: () => void }) {
  return (
    <Alert color="green" title={`Signing secret of ${endpoint.name}`} withCloseButton onClose={onClose}>
      <Stack gap={4}>
        <Code data-testid="signing-secret">{endpoint.signing_secret}</Code>
        <Text size="sm">Copy it now: it is not shown again. Your receiver verifies each event with it (client.webhooks.unwrap).</Text>
      </Stack>
    </Alert>
  );
}

function Deliveries({ endpoint }: { endpoint: WebhookEndpoint }) {
  const path = `/v1/webhook_endpoints/${encodeURIComponent(endpoint.id)}/deliveries`;
  const list = useLoad((signal) => api<WebhookDeliveryList>('openai', path, { signal }), [path]);
  const [error, setError] = useState<string>();
  const redeliver = async (deliveryId: string) => {
    setError(undefined);
    try {
      await api('openai', `${path}/${encodeURIComponent(deliveryId)}/redeliver`, { method: 'POST' });
      list.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <Stack gap="xs">
      <ErrorAlert message={list.error ?? error} />
      {list.data && list.data.data.length === 0 && <Text c="dimmed" size="sm">No event was sent to it yet.</Text>}
      {list.data && list.data.data.length > 0 && (
        <ScrollTable label={`Deliveries to ${endpoint.name}`} minWidth={720} headers={['Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Written', '']}>
          {list.data.data.map((d) => (
            <Table.Tr key={d.id}>
              <Table.Td>{d.event_type}</Table.Td>
              <Table.Td>
                <Badge color={STATUS_COLOR[d.status]}>{d.status}</Badge>
              </Table.Td>
              <Table.Td>{d.attempts}</Table.Td>
              <Table.Td>{d.last_status_code ?? d.last_error ?? '–'}</Table.Td>
              <Table.Td>{unix(d.next_attempt_at)}</Table.Td>
              <Table.Td>{unix(d.created_at)}</Table.Td>
              <Table.Td>
                <Button size="xs" variant="light" onClick={() => void redeliver(d.id)}>
                  Send again
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </ScrollTable>
      )}
      <Group>
        <Button size="xs" variant="subtle" onClick={list.reload}>
          Refresh
        </Button>
      </Group>
    </Stack>
  );
}

function EndpointCard({ endpoint, types, onChanged, onSecret }: { endpoint: WebhookEndpoint; types: string[]; onChanged: () => void; onSecret: (e: WebhookEndpointWithSecret) => void }) {
  const path = `/v1/webhook_endpoints/${encodeURIComponent(endpoint.id)}`;
  const [testType, setTestType] = useState(endpoint.event_types[0] ?? types[0] ?? '');
  const [tested, setTested] = useState<string>();
  const [error, setError] = useState<string>();
  const [showDeliveries, setShowDeliveries] = useState(false);
  const act = async (fn: () => Promise<void>) => {
    setError(undefined);
    try {
      await fn();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <Card withBorder padding="md" aria-label={`Webhook endpoint ${endpoint.name}`}>
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>{endpoint.name}</Text>
          <Text size="sm" c="dimmed">
            {endpoint.id} · secret {endpoint.signing_secret_hint}
          </Text>
        </Group>
        <Text size="sm">{endpoint.url}</Text>
        <Group gap={4}>
          {endpoint.event_types.map((t) => (
            <Badge key={t} variant="light">
              {t}
            </Badge>
          ))}
        </Group>
        <ErrorAlert message={error} />
        {tested && <Text size="sm" data-testid="test-result">{tested}</Text>}
        <Group>
          <NativeSelect size="xs" aria-label="Event type to send" value={testType} data={types} onChange={(e) => setTestType(e.currentTarget.value)} />
          <Button
            size="xs"
            onClick={() =>
              void act(async () => {
                const result = await api<WebhookEndpointTestResult>('openai', `${path}/test`, { json: { event_type: testType } });
                setTested(result.status_code === 0 ? `${testType}: the endpoint could not be reached` : `${testType}: it answered ${result.status_code}`);
              })
            }
          >
            Send a sample
          </Button>
          <Button size="xs" variant="light" onClick={() => setShowDeliveries((v) => !v)}>
            {showDeliveries ? 'Hide deliveries' : 'Deliveries'}
          </Button>
          <Button size="xs" variant="light" onClick={() => void act(async () => onSecret(await api<WebhookEndpointWithSecret>('openai', `${path}/rotate_secret`, { json: {} })))}>
            New secret
          </Button>
          <ConfirmButton
            size="xs"
            color="red"
            variant="light"
            question={`Remove ${endpoint.name}? Events not yet delivered to it are dropped.`}
            confirmLabel="Remove"
            onConfirm={() => act(async () => {
              await api('openai', path, { method: 'DELETE' });
              onChanged();
            })}
          >
            Remove
          </ConfirmButton>
        </Group>
        {showDeliveries && <Deliveries endpoint={endpoint} />}
      </Stack>
    </Card>
  );
}

export function WebhooksPage() {
  const endpoints = useLoad((signal) => api<WebhookEndpointList>('openai', '/v1/webhook_endpoints?limit=100', { signal }), []);
  const types = useLoad((signal) => api<WebhookEventTypeList>('openai', '/v1/webhook_event_types', { signal }), []);
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [chosen, setChosen] = useState<string[]>(['fine_tuning.job.succeeded', 'fine_tuning.job.failed', 'fine_tuning.job.cancelled']);
  const [secret, setSecret] = useState<WebhookEndpointWithSecret>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const add = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      setSecret(await api<WebhookEndpointWithSecret>('openai', '/v1/webhook_endpoints', { json: { name, url, event_types: chosen } }));
      setName('');
      setUrl('');
      endpoints.reload();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const typeNames = types.data?.data ?? [];
  return (
    <Stack>
      <Title order={2}>Webhooks</Title>
      <Text size="sm" c="dimmed">
        Events are POSTed to each endpoint as OpenAI sends them, signed (Standard Webhooks), and retried for over a day until it answers 2xx.
      </Text>
      <ErrorAlert message={endpoints.error ?? types.error} />
      {secret && <SecretShown endpoint={secret} onClose={() => setSecret(undefined)} />}
      <Card withBorder padding="lg" component="form" onSubmit={(e) => void add(e)} aria-label="Add a webhook endpoint">
        <Stack>
          <Group grow align="flex-start">
            <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
            <TextInput label="URL" description="https, reached from the workers' and services' network" required value={url} onChange={(e) => setUrl(e.currentTarget.value)} />
          </Group>
          <MultiSelect label="Events" data={typeNames} value={chosen} onChange={setChosen} required />
          <ErrorAlert message={error} title="The endpoint was not added" />
          <Group justify="flex-end">
            <Button type="submit" loading={busy} disabled={!name || !url || chosen.length === 0}>
              Add endpoint
            </Button>
          </Group>
        </Stack>
      </Card>
      {endpoints.data && endpoints.data.data.length === 0 && <Text c="dimmed">No endpoint yet.</Text>}
      {(endpoints.data?.data ?? []).map((endpoint) => (
        <EndpointCard key={endpoint.id} endpoint={endpoint} types={typeNames} onChanged={endpoints.reload} onSecret={(e) => { setSecret(e); endpoints.reload(); }} />
      ))}
    </Stack>
  );
}
