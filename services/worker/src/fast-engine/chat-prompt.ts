// Conversation → prompt tokens, rendered with the chat template stored in the GGUF (the one the core exported).
import { JinjaTemplateChatWrapper, SpecialToken, type ChatHistoryItem, type LlamaModel, type Token } from 'node-llama-cpp';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

const wrappers = new WeakMap<LlamaModel, JinjaTemplateChatWrapper>();

function wrapperOf(model: LlamaModel): JinjaTemplateChatWrapper {
  let wrapper = wrappers.get(model);
  if (!wrapper) {
    const template = model.fileInfo.metadata.tokenizer?.chat_template;
    if (typeof template !== 'string' || template === '') {
      throw new Error(`${model.filename ?? 'model'} has no tokenizer.chat_template; export it with the core's gguf command`);
    }
    wrapper = new JinjaTemplateChatWrapper({ template, trimLeadingWhitespaceInResponses: false });
    wrappers.set(model, wrapper);
  }
  return wrapper;
}

function promptContext(model: LlamaModel, conversation: readonly ChatMessage[]) {
  const history: ChatHistoryItem[] = conversation.map((m) =>
    m.role === 'assistant'
      ? { type: 'model', response: [m.content] }
      : { type: m.role, text: m.content },
  );
  history.push({ type: 'model', response: [] });
  return wrapperOf(model).generateContextState({ chatHistory: history }).contextText;
}

/** The prompt tokens for `conversation` followed by the template's generation prompt (the assistant turn opener). */
export function promptTokens(model: LlamaModel, conversation: readonly ChatMessage[]): Token[] {
  return promptContext(model, conversation).tokenize(model.tokenizer);
}

/** The same prompt as text, special tokens written out (a leading BOS as the model's BOS text). */
export function promptText(model: LlamaModel, conversation: readonly ChatMessage[]): string {
  return promptContext(model, conversation)
    .values.map((value) => (typeof value === 'string' ? value : value instanceof SpecialToken ? model.detokenize(value.tokenize(model.tokenizer), true) : value.value))
    .join('');
}
