// The four services: name, OpenAPI title and version, default port and route contracts.
import type { RouteContract } from './routes/contract.ts';
import { exportRoutes } from './routes/export.ts';
import { inferenceRoutes } from './routes/inference.ts';
import { preprocessingRoutes } from './routes/preprocessing.ts';
import { trainingRoutes } from './routes/training.ts';

export type ServiceName = 'preprocessing' | 'training' | 'export' | 'inference';

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
  routes: Object.values(preprocessingRoutes),
};

export const trainingService: ServiceInfo = {
  name: 'training',
  title: 'Fine-tuning pipeline: training',
  description: 'Runs fine-tuning jobs (SFT, DPO, ORPO, GRPO; full, LoRA, QLoRA) on processed datasets and reports their progress.',
  version: '1.0.0',
  defaultPort: 8002,
  tags: [healthTag, { name: 'jobs', description: 'Training jobs' }, { name: 'workers', description: 'The workers that run jobs' }],
  routes: Object.values(trainingRoutes),
};

export const exportService: ServiceInfo = {
  name: 'export',
  title: 'Fine-tuning pipeline: export',
  description: 'Publishes the adapter, merged model and GGUF file of trained jobs to the blob store and model-hub repositories.',
  version: '1.0.0',
  defaultPort: 8003,
  tags: [healthTag, { name: 'exports', description: 'Artifacts and their exports' }],
  routes: Object.values(exportRoutes),
};

export const inferenceService: ServiceInfo = {
  name: 'inference',
  title: 'Fine-tuning pipeline: inference',
  description: 'Evaluates trained or base models on processed datasets and generates answers for batches of conversations.',
  version: '1.0.0',
  defaultPort: 8004,
  tags: [healthTag, { name: 'inference', description: 'Evaluation and batch generation' }],
  routes: Object.values(inferenceRoutes),
};

export const services: Readonly<Record<ServiceName, ServiceInfo>> = {
  preprocessing: preprocessingService,
  training: trainingService,
  export: exportService,
  inference: inferenceService,
};

export const SERVICE_NAMES = Object.keys(services) as ServiceName[];
