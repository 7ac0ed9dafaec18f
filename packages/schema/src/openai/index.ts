// The OpenAI-compatible surface (/v1): OpenAI's own field names and shapes for files, fine-tuning jobs, models and
// chat completions, so the official SDKs work unchanged (decisions.md, "The OpenAI-compatible surface"). Requests are
// lenient as OpenAI's are (unknown fields are dropped, not refused); responses carry every field the SDKs read.
// One module per resource, as services/openai/src/routes has; common.ts holds what they share. The order of these lines
// is the order in which the schemas register their ids with zod, which is the order of the components in
// openapi/openai.json: keep it (a new resource goes last).
export { ListQuery, OpenAiError } from './common.ts';
export * from './files.ts';
export * from './uploads.ts';
export * from './batches.ts';
export * from './webhooks.ts';
export * from './checkpoints.ts';
export * from './graders.ts';
export * from './fine-tuning.ts';
export * from './models.ts';
export * from './chat.ts';
export * from './responses.ts';
