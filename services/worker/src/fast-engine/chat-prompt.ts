// Conversation → prompt tokens, rendered with the chat template stored in the GGUF (the one the core exported). A
// conversation with tools, tool calls or tool results is rendered by the template itself, as transformers renders it
// (node-llama-cpp's chat wrapper has its own function-calling format, not the family's).
import { JinjaTemplateChatWrapper, SpecialToken, type ChatHistoryItem, type LlamaModel, type Token } from 'node-llama-cpp';
import { renderChatTemplate } from '@ftp/jobs/template-render';
import type { PlainMessage } from '@ftp/schema';

const wrappers = new WeakMap<LlamaModel, JinjaTemplateChatWrapper>();

function templateOf(model: LlamaModel): string {
  const template = model.fileInfo.metadata.tokenizer?.chat_template;
  if (typeof template !== 'string' || template === '') {
    throw new Error(`${model.filename ?? 'model'} has no tokenizer.chat_template; export it with the core's gguf command`);
  }
  return template;
}

function wrapperOf(model: LlamaModel): JinjaTemplateChatWrapper {
  let wrapper = wrappers.get(model);
  if (!wrapper) {
    wrapper = new JinjaTemplateChatWrapper({ template: templateOf(model), trimLeadingWhitespaceInResponses: false });
    wrappers.set(model, wrapper);
  }
  return wrapper;
}

function promptContext(model: LlamaModel, conversation: readonly PlainMessage[]) {
  const history: ChatHistoryItem[] = conversation.map((m) =>
    m.role === 'assistant'
      ? { type: 'model', response: [m.content] }
      : { type: m.role === 'tool' ? 'user' : m.role, text: m.content },
  );
  history.push({ type: 'model', response: [] });
  return wrapperOf(model).generateContextState({ chatHistory: history }).contextText;
}

/** The prompt tokens for `conversation` followed by the template's generation prompt (the assistant turn opener). */
export function promptTokens(model: LlamaModel, conversation: readonly PlainMessage[], tools?: readonly unknown[]): Token[] {
  if (tools || conversation.some((m) => m.role === 'tool' || m.tool_calls)) {
    const text = renderChatTemplate(templateOf(model), conversation, { tools, addGenerationPrompt: true, bosToken: model.tokens.bosString ?? '', eosToken: model.tokens.eosString ?? '' });
    return model.tokenize(text, true);
  }
  return promptContext(model, conversation).tokenize(model.tokenizer);
}

/** The same prompt as text, special tokens written out (a leading BOS as the model's BOS text). */
export function promptText(model: LlamaModel, conversation: readonly PlainMessage[]): string {
  return promptContext(model, conversation)
    .values.map((value) => (typeof value === 'string' ? value : value instanceof SpecialToken ? model.detokenize(value.tokenize(model.tokenizer), true) : value.value))
    .join('');
}
