// The six services (the four of the interface, the OpenAI-compatible one and the Tinker-compatible one): name, OpenAPI title and version, default port and route contracts.
import { ErrorBody } from './common.ts';
import { OpenAiError } from './openai/common.ts';
import { withFrameworkErrors, type RouteContract } from './routes/contract.ts';
import { exportRoutes } from './routes/export.ts';
import { inferenceRoutes } from './routes/inference.ts';
import { openaiRoutes } from './routes/openai/index.ts';
import { preprocessingRoutes } from './routes/preprocessing.ts';
import { trainingRoutes } from './routes/training.ts';
import { sweepRoutes } from './routes/sweeps.ts';
import { tinkerRoutes } from './routes/tinker.ts';

export type ServiceName = 'preprocessing' | 'training' | 'export' | 'inference' | 'openai' | 'tinker';

export interface ServiceInfo {
  readonly name: ServiceName;
  readonly title: string;
  readonly description: string;
  /** Interface version, the OpenAPI info.version and the health body's version. */
  readonly version: string;
  readonly defaultPort: number;
  readonly tags: ReadonlyArray<{ name: string; description: string }>;
  readonly routes: readonly RouteContract[];
}

const healthTag = { name: 'health', description: 'Liveness and dependency checks' };

export const preprocessingService: ServiceInfo = {
  name: 'preprocessing',
  title: 'Fine-tuning pipeline: preprocessing',
  description: 'Uploads datasets and converts them, or hub datasets, to ChatML with field mappings, augmentation and splits.',
  version: '2.0.0',
  defaultPort: 8001,
  tags: [healthTag, { name: 'datasets', description: 'Raw uploads and processed datasets' }],
  routes: Object.values(preprocessingRoutes).map((route) => withFrameworkErrors(route, ErrorBody)),
};

export const trainingService: ServiceInfo = {
  name: 'training',
  title: 'Fine-tuning pipeline: training',
  description: 'Runs fine-tuning jobs (SFT, DPO, ORPO, GRPO; full, LoRA, QLoRA) on processed datasets and reports their progress.',
  version: '1.0.0',
  defaultPort: 8002,
  tags: [healthTag, { name: 'jobs', description: 'Training jobs' }, { name: 'workers', description: 'The workers that run jobs' }, { name: 'sweeps', description: 'Hyperparameter sweeps: trials proposed by Optuna, run as training jobs' }],
  routes: [...Object.values(trainingRoutes), ...Object.values(sweepRoutes)].map((route) => withFrameworkErrors(route, ErrorBody)),
};

export const exportService: ServiceInfo = {
  name: 'export',
  title: 'Fine-tuning pipeline: export',
  description: 'Publishes the adapter, merged model and GGUF file of trained jobs to the blob store and model-hub repositories.',
  version: '1.0.0',
  defaultPort: 8003,
  tags: [healthTag, { name: 'exports', description: 'Artifacts and their exports' }],
  routes: Object.values(exportRoutes).map((route) => withFrameworkErrors(route, ErrorBody)),
};

export const inferenceService: ServiceInfo = {
  name: 'inference',
  title: 'Fine-tuning pipeline: inference',
  description: 'Evaluates trained or base models on processed datasets and with standard benchmarks, and generates answers for batches of conversations.',
  version: '1.0.0',
  defaultPort: 8004,
  tags: [healthTag, { name: 'inference', description: 'Evaluation and batch generation' }, { name: 'evaluations', description: 'Evaluations with standard benchmarks (lm-eval tasks, HumanEval), run in the background' }, { name: 'comparisons', description: 'Pairwise comparisons of two models by an LLM judge, each pair judged in both orders' }],
  routes: Object.values(inferenceRoutes).map((route) => withFrameworkErrors(route, ErrorBody)),
};

export const openaiService: ServiceInfo = {
  name: 'openai',
  title: 'Fine-tuning pipeline: OpenAI-compatible API',
  description:
    'OpenAI’s files, uploads, fine-tuning jobs, models, chat completions, (stateless) responses and batches over the same datasets, jobs and models, for the official ' +
    'SDKs unchanged (base_url http://host:8000/v1). Errors use OpenAI’s body.',
  version: '1.0.0',
  defaultPort: 8000,
  tags: [
    healthTag,
    { name: 'files', description: 'Files: training data, batch input and output (uploads)' },
    { name: 'fine-tuning', description: 'Fine-tuning jobs (training jobs), their events and checkpoints' },
    { name: 'models', description: 'Base and fine-tuned models' },
    { name: 'chat', description: 'Chat completions' },
    { name: 'responses', description: 'Responses (OpenAI’s Responses API, stateless)' },
    { name: 'batches', description: 'Batches: files of chat or responses requests answered by the workers' },
  ],
  routes: Object.values(openaiRoutes).map((route) => withFrameworkErrors(route, OpenAiError)),
};

export const tinkerService: ServiceInfo = {
  name: 'tinker',
  title: 'Fine-tuning pipeline: Tinker-compatible API',
  description:
    'Thinking Machines’ Tinker training primitives (forward_backward, optim_step, sample, save and load state) for the official tinker SDK unchanged ' +
    '(base_url http://host:8005, api_key tml-<API key>): each training run is a LoRA model a worker holds in memory; every call answers a future.',
  version: '1.0.0',
  defaultPort: 8005,
  tags: [healthTag, { name: 'tinker', description: 'The tinker SDK’s calls: sessions, training runs, sampling, futures, checkpoints' }],
  routes: Object.values(tinkerRoutes).map((route) => withFrameworkErrors(route, ErrorBody)),
};

export const services: Readonly<Record<ServiceName, ServiceInfo>> = {
  preprocessing: preprocessingService,
  training: trainingService,
  export: exportService,
  inference: inferenceService,
  openai: openaiService,
  tinker: tinkerService,
};

export const SERVICE_NAMES = Object.keys(services) as ServiceName[];
