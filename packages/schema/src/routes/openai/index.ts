// Route contracts of the OpenAI-compatible surface (/v1): files, fine-tuning jobs, models, chat completions and responses.
// Every error is OpenAI's body (OpenAiError) with the statuses the SDKs expect: a request that does not validate is a
// 400 invalid_request_error naming the field in `param` (not our 422), 401, 404, 409, 413, 500, 503, 504.
// One module per resource, as services/openai/src/routes has; openaiRoutes assembles them in the order of the
// document's paths (openapi/openai.json): keep it.
import { OpenAiError } from '../../openai/common.ts';
import { healthRoute, metricsRoute } from '../contract.ts';
import { batchRoutes } from './batches.ts';
import { chatRoutes } from './chat.ts';
import { checkpointRoutes } from './checkpoints.ts';
import { fileRoutes } from './files.ts';
import { fineTuningRoutes } from './fine-tuning.ts';
import { graderRoutes } from './graders.ts';
import { modelRoutes } from './models.ts';
import { responseRoutes } from './responses.ts';
import { uploadRoutes } from './uploads.ts';
import { webhookRoutes } from './webhooks.ts';

export const openaiRoutes = {
  getHealth: healthRoute('OpenAI-compatible'),
  getMetrics: metricsRoute(OpenAiError),
  ...fileRoutes,
  ...uploadRoutes,
  ...batchRoutes,
  ...checkpointRoutes,
  ...webhookRoutes,
  ...fineTuningRoutes,
  ...graderRoutes,
  ...modelRoutes,
  ...chatRoutes,
  ...responseRoutes,
};
