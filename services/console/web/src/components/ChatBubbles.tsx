// Conversations as chat bubbles: a processed record of any mode (messages; prompt; prompt + chosen/rejected), an
// evaluation sample, or a playground exchange.
import type { ReactNode } from 'react';
import { Badge, Box, Group, Paper, Stack, Text } from '@mantine/core';
import type { ChatMessage } from '../api/types.ts';
import classes from './ChatBubbles.module.css';

function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : `[image ${part.image}]`)).join('\n');
}

export function ChatBubble({ message, label }: { message: ChatMessage; label?: string }) {
  return (
    <Box className={classes.row} data-role={message.role}>
      <Paper className={classes.bubble} data-role={message.role} radius="md" p="xs" withBorder>
        <Text size="xs" c="dimmed" fw={600}>
          {label ?? message.role}
        </Text>
        <Text size="sm" className={classes.text}>
          {contentText(message.content) || '\u00a0'}
        </Text>
      </Paper>
    </Box>
  );
}

export function Conversation({ messages, extra }: { messages: ChatMessage[]; extra?: ReactNode }) {
  return (
    <Stack gap={6} className={classes.conversation} data-testid="conversation">
      {messages.map((message, i) => (
        <ChatBubble key={i} message={message} />
      ))}
      {extra}
    </Stack>
  );
}

const isMessages = (value: unknown): value is ChatMessage[] => Array.isArray(value) && value.every((m) => m && typeof m === 'object' && 'role' in m);

/** A processed record in whichever shape its processing mode writes. */
export function RecordBubbles({ record }: { record: Record<string, unknown> }) {
  if (isMessages(record.messages)) return <Conversation messages={record.messages} />;
  const prompt = isMessages(record.prompt) ? record.prompt : [];
  if (isMessages(record.chosen) && isMessages(record.rejected)) {
    return (
      <Stack gap={6} className={classes.conversation} data-testid="conversation">
        {prompt.map((message, i) => (
          <ChatBubble key={i} message={message} />
        ))}
        <Group grow align="flex-start" gap="xs">
          {record.chosen.map((m, i) => (
            <ChatBubble key={`c${i}`} message={m} label="chosen" />
          ))}
          {record.rejected.map((m, i) => (
            <ChatBubble key={`r${i}`} message={m} label="rejected" />
          ))}
        </Group>
      </Stack>
    );
  }
  const columns = Object.keys(record).filter((k) => k !== 'prompt' && k !== 'metadata');
  return (
    <Conversation
      messages={prompt}
      extra={
        columns.length > 0 && (
          <Group gap={4}>
            {columns.map((c) => (
              <Badge key={c} variant="outline" size="sm" tt="none">
                {c}: {String(record[c]).slice(0, 40)}
              </Badge>
            ))}
          </Group>
        )
      }
    />
  );
}
