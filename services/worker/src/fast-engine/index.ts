// The fast engine's public surface: what the inference worker imports.
export { FastEngine, type FastEngineOptions, type GenerateRequest, type Generation, type GenerationOptions, type OutputGrammar } from './engine.ts';
export { promptText } from './chat-prompt.ts';
export { EngineRefusal, UnsupportedSchemaError, type RefusalKind } from './refusals.ts';
