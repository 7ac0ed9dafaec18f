// Chat with a base model and one or two tuned models side by side: the same prompt goes to each, and each answer
// streams in as the /v1 chat completions API sends it. Stop, or leaving the page, closes the streams: the service then
// stops generating (a client gone cancels its generation), and what came so far stays in the conversation.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Button, Card, Group, MultiSelect, NumberInput, SimpleGrid, Stack, Text, Textarea, Title } from '@mantine/core';
import { useSearch } from 'wouter';
import { serverSentEvents } from '../../api/client.ts';
import { jobIdOf, listModels } from '../../api/models.ts';
import type { ChatMessage } from '../../api/types.ts';
import { useLoad } from '../../api/use-load.ts';
import { ChatBubble } from '../../components/ChatBubbles.tsx';
import { ErrorAlert } from '../../components/ErrorAlert.tsx';

const MAX_MODELS = 3;

interface Column {
  messages: ChatMessage[];
  streaming: boolean;
  error?: string;
  /** What the service prepares before the first token on a model's first use (a GGUF made, an engine started). */
  preparing?: string;
}

export function PlaygroundPage() {
  const job = new URLSearchParams(useSearch()).get('job');
  const models = useLoad((signal) => listModels(signal), []);
  const [chosen, setChosen] = useState<string[]>();
  const [system, setSystem] = useState('');
  const [prompt, setPrompt] = useState('');
  const [maxTokens, setMaxTokens] = useState<number | string>(64);
  const [temperature, setTemperature] = useState<number | string>(0);
  const [columns, setColumns] = useState<Record<string, Column>>({});

  const options = [...(models.data?.tuned ?? []), ...(models.data?.bases ?? [])];
  // First choice: the job the page was opened from (if any) next to its base model, else the first of each.
  const tunedOfJob = models.data?.tuned.find((m) => jobIdOf(m) === job);
  const selected = chosen ?? [tunedOfJob ?? models.data?.tuned[0], models.data?.bases.find((b) => tunedOfJob?.startsWith(`ft:${b}:`)) ?? models.data?.bases[0]].filter((m): m is string => !!m);
  const busy = Object.values(columns).some((c) => c.streaming);
  /** The streams of the prompt being answered: Stop and leaving the page abort them. */
  const answering = useRef<AbortController | undefined>(undefined);
  useEffect(() => () => answering.current?.abort(), []);

  const send = async (event: FormEvent) => {
    event.preventDefault();
    const text = prompt.trim();
    if (!text) return;
    setPrompt('');
    const controller = new AbortController();
    answering.current = controller;
    await Promise.all(selected.map((model) => ask(model, text, controller.signal)));
  };

  const update = (model: string, change: (column: Column) => Column) => setColumns((all) => ({ ...all, [model]: change(all[model] ?? { messages: [], streaming: false }) }));

  const ask = async (model: string, text: string, signal: AbortSignal) => {
    const earlier = columns[model]?.messages ?? [];
    const history: ChatMessage[] = [...(system && earlier.length === 0 ? [{ role: 'system' as const, content: system }] : []), ...earlier, { role: 'user', content: text }];
    update(model, () => ({ messages: [...history, { role: 'assistant', content: '' }], streaming: true }));
    const append = (piece: string) =>
      update(model, (c) => {
        const messages = [...c.messages];
        const last = messages.at(-1)!;
        messages[messages.length - 1] = { ...last, content: `${last.content as string}${piece}` };
        return { ...c, messages };
      });
    try {
      const onComment = (comment: string) => {
        if (comment.startsWith('preparing: ')) update(model, (c) => ({ ...c, preparing: comment.slice('preparing: '.length) }));
      };
      const stream = serverSentEvents('openai', '/v1/chat/completions', {
        json: { model, messages: history, stream: true, max_tokens: Number(maxTokens) || undefined, temperature: Number(temperature) },
        signal,
      }, onComment);
      for await (const message of stream) {
        if (message.data === '[DONE]') break;
        const chunk = JSON.parse(message.data) as { choices?: Array<{ delta?: { content?: string } }>; error?: { message: string } };
        if (chunk.error) throw new Error(chunk.error.message);
        const piece = chunk.choices?.[0]?.delta?.content;
        if (piece) {
          update(model, (c) => ({ ...c, preparing: undefined }));
          append(piece);
        }
      }
      update(model, (c) => ({ ...c, streaming: false, preparing: undefined }));
    } catch (err) {
      if (signal.aborted) {
        // Stopped: the text so far stays in the conversation (an answer with none yet goes).
        update(model, (c) => ({ ...c, messages: c.messages.at(-1)?.content === '' ? c.messages.slice(0, -1) : c.messages, streaming: false, preparing: undefined }));
      } else update(model, (c) => ({ ...c, messages: c.messages.slice(0, -1), streaming: false, preparing: undefined, error: (err as Error).message }));
    }
  };

  return (
    <Stack>
      <Title order={2}>Playground</Title>
      <ErrorAlert message={models.error} />
      <Card withBorder padding="lg" component="form" onSubmit={(e) => void send(e)} aria-label="Prompt">
        <Stack>
          <MultiSelect
            label="Models"
            description={`up to ${MAX_MODELS}: a base model and one or two tuned ones`}
            data={options}
            value={selected}
            maxValues={MAX_MODELS}
            onChange={setChosen}
            searchable
          />
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <Textarea label="System prompt" description="sent before the first message" autosize minRows={1} value={system} onChange={(e) => setSystem(e.currentTarget.value)} />
            <NumberInput label="Max tokens" value={maxTokens} min={1} onChange={setMaxTokens} />
            <NumberInput label="Temperature" description="0 is greedy" value={temperature} min={0} max={2} step={0.1} decimalScale={2} onChange={setTemperature} />
          </SimpleGrid>
          <Textarea
            label="Message"
            autosize
            minRows={2}
            value={prompt}
            onChange={(e) => setPrompt(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) e.currentTarget.form?.requestSubmit();
            }}
          />
          <Group justify="space-between">
            <Text size="xs" c="dimmed">
              Ctrl+Enter sends. Each model keeps its own conversation.
            </Text>
            <Group gap="xs">
              <Button variant="default" onClick={() => setColumns({})} disabled={busy}>
                New conversation
              </Button>
              {busy && (
                <Button variant="default" onClick={() => answering.current?.abort()}>
                  Stop
                </Button>
              )}
              <Button type="submit" loading={busy} disabled={selected.length === 0 || !prompt.trim()}>
                Send
              </Button>
            </Group>
          </Group>
        </Stack>
      </Card>
      <SimpleGrid cols={{ base: 1, md: Math.max(selected.length, 1) }}>
        {selected.map((model) => (
          <Card key={model} withBorder padding="sm" data-testid="playground-column" data-model={model}>
            <Text size="xs" fw={600} mb="xs" style={{ overflowWrap: 'anywhere' }}>
              {model}
            </Text>
            <Stack gap={6} aria-live="polite">
              {(columns[model]?.messages ?? []).map((message, i) => (
                <ChatBubble key={i} message={message} />
              ))}
            </Stack>
            {columns[model]?.preparing && (
              <Text size="xs" c="dimmed" role="status" data-testid="preparing">
                Preparing the model (first use): {columns[model]!.preparing}
              </Text>
            )}
            <ErrorAlert message={columns[model]?.error} title="No answer" />
          </Card>
        ))}
      </SimpleGrid>
    </Stack>
  );
}
