// Conversations as the engines take them: plain-text content (the text parts of a parts message, joined as the
// core's chat.text_of joins them); the prompt/reference split evaluation uses.
import type { ChatMessage, PlainMessage } from '@ftp/schema';

export function textOf(content: ChatMessage['content']): string {
  return typeof content === 'string' ? content : content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

export function plainConversation(conversation: readonly ChatMessage[]): PlainMessage[] {
  return conversation.map((m) => ({ role: m.role, content: textOf(m.content) }));
}

/** Every message before the last assistant message, and that message's text; undefined without one. */
export function promptAndReference(messages: readonly ChatMessage[]): { prompt: ChatMessage[]; reference: string } | undefined {
  const last = messages.findLastIndex((m) => m.role === 'assistant');
  if (last < 0) return undefined;
  return { prompt: messages.slice(0, last).map((m) => ({ role: m.role, content: m.content })), reference: textOf(messages[last]!.content) };
}
