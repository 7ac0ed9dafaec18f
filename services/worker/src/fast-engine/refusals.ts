// What the fast engine refuses of a request, by kind: the words are for people, the kind is what a caller decides on
// (the inference path answers 400 at the field the kind names). It crosses the engine process's IPC as the kind.
export type RefusalKind = 'unsupported_schema' | 'prompt_too_long';

export class EngineRefusal extends Error {
  constructor(
    readonly kind: RefusalKind,
    message: string,
  ) {
    super(message);
    this.name = 'EngineRefusal';
  }
}

/** A JSON Schema (response_format, or a forced tool's parameters) llama.cpp's grammar cannot honour. */
export class UnsupportedSchemaError extends EngineRefusal {
  constructor(message: string) {
    super('unsupported_schema', message);
    this.name = 'UnsupportedSchemaError';
  }
}

/** A conversation whose prompt does not fit the model's context. */
export class PromptTooLong extends EngineRefusal {
  constructor(message: string) {
    super('prompt_too_long', message);
    this.name = 'PromptTooLong';
  }
}

/** The refusal a kind names, as it comes back over IPC. */
export const refusalOf = (kind: RefusalKind, message: string): EngineRefusal =>
  kind === 'unsupported_schema' ? new UnsupportedSchemaError(message) : new PromptTooLong(message);
