// ftune chat MODEL: a conversation with a model over /v1/chat/completions, the answer streamed as it is generated.
// Lines come from stdin (a person at a terminal, or a pipe); the whole conversation goes with each question.
// `/reset` starts over (the --system message stays), `/exit` or end of input ends; --once asks one question.
import readline from 'node:readline';
import { Command, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { completeChat, resolveChatModel, streamChat, type ChatTurn, type GenerationOptions } from '../chat-completions.ts';
import { CliError } from '../errors.ts';
import type { Api } from '../http.ts';
import { context } from './context.ts';
import { numberFrom, positiveInt } from './option-values.ts';

const HELP = '/reset starts the conversation over, /exit (or end of input) ends it';

/** The conversation: its turns so far and how one more question is answered. */
class Conversation {
  private turns: ChatTurn[];

  constructor(
    private readonly api: Api,
    private readonly model: string,
    private readonly system: string | undefined,
    private readonly options: GenerationOptions,
    private readonly json: boolean,
  ) {
    this.turns = this.start();
  }

  private start(): ChatTurn[] {
    return this.system ? [{ role: 'system', content: this.system }] : [];
  }

  reset(): void {
    this.turns = this.start();
  }

  /** Prints the answer to `question` (streamed, or as one JSON line with --json) and keeps both turns; a question
   *  that got no answer is not kept. */
  async ask(question: string, signal?: AbortSignal): Promise<void> {
    const messages: ChatTurn[] = [...this.turns, { role: 'user', content: question }];
    let answer: string;
    if (this.json) {
      const completion = await completeChat(this.api, this.model, messages, this.options);
      answer = completion.choices[0]?.message.content ?? '';
      process.stdout.write(`${JSON.stringify(completion)}\n`);
    } else {
      // A model's first use (a GGUF made, an engine started) can take a minute: say what runs, on stderr.
      const preparing = (message: string) => process.stderr.write(`(preparing the model: ${message})\n`);
      answer = await streamChat(this.api, this.model, messages, this.options, (text) => process.stdout.write(text), signal, preparing);
      process.stdout.write('\n');
    }
    this.turns = [...messages, { role: 'assistant', content: answer }];
  }
}

/** Reads questions from stdin until /exit or its end. At a terminal: a prompt, Ctrl-C stops an answer (or, at the
 *  prompt, ends the chat), and a failed question is reported and the chat goes on; from a pipe a failure ends it. */
async function converse(conversation: Conversation, model: string): Promise<void> {
  const terminal = process.stdin.isTTY === true && process.stdout.isTTY === true;
  const rl = readline.createInterface({ input: process.stdin, ...(terminal ? { output: process.stdout, terminal: true } : { terminal: false }) });
  let answering: AbortController | undefined;
  rl.on('SIGINT', () => (answering ? answering.abort() : rl.close()));
  if (terminal) {
    process.stderr.write(`chatting with ${model}; ${HELP}\n`);
    rl.setPrompt('> ');
    rl.prompt();
  }
  try {
    for await (const line of rl) {
      const text = line.trim();
      if (text === '/exit') break;
      if (text === '/reset') {
        conversation.reset();
        process.stderr.write('(conversation reset)\n');
      } else if (/^\/\w+$/.test(text)) {
        process.stderr.write(`unknown command ${text}: ${HELP}\n`);
      } else if (text) {
        const controller = new AbortController();
        answering = controller;
        try {
          await conversation.ask(text, controller.signal);
        } catch (err) {
          if (controller.signal.aborted) process.stderr.write('\n(answer stopped)\n');
          else if (terminal && err instanceof CliError) process.stderr.write(`error: ${err.message}\n`);
          else throw err;
        } finally {
          answering = undefined;
        }
      }
      if (terminal) rl.prompt();
    }
  } finally {
    rl.close();
  }
}

export function chatCommand(): CommandUnknownOpts {
  return new Command('chat')
    .description('chat with a model (OpenAI-compatible service): answers stream as they are generated; questions are read from stdin')
    .argument('<model>', 'a base model id (smollm2-135m, owner/name), a fine-tuned model (ft:<base>:<suffix>:<job_id>) or a job_id')
    .option('--system <text>', 'system message at the start of the conversation')
    .option('--temperature <x>', '0 is greedy, up to 2 (service default: 1)', numberFrom(0, 2, 'a number from 0 (greedy) to 2'))
    .option('--max-tokens <n>', 'longest answer, in tokens (service default: 512)', positiveInt)
    .option('--once <question>', 'ask this one question, print the answer and exit (stdin is not read)')
    .option('--json', 'print each answer as the API’s chat.completion document, one per line (not streamed)')
    .action(async (modelName, options, command) => {
      const { api, json } = context(command);
      const model = await resolveChatModel(api, modelName);
      const conversation = new Conversation(api, model, options.system, { temperature: options.temperature, maxTokens: options.maxTokens }, json);
      if (options.once !== undefined) return conversation.ask(options.once);
      await converse(conversation, model);
    });
}
