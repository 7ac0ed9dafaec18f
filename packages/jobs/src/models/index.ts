// Models: where a base model is (the model store, this machine's cache, the hub) and its chat template; where a
// training job's files are and what they are called; which model a request runs (checked against the rows); and the
// names models go by (ft:…, checkpoints). Imports queues/ only.
export { DEFAULT_BASE_MODEL, listStoredModels, locateBaseModel, MODEL_STORE_PREFIX, modelContextLength, modelStorePrefix, type ModelLocation, type ModelLookup } from './model-store.ts';
export { checkToolTemplate, datasetUsesTools, modelChatTemplate } from './chat-template.ts';
export { templateSupportsTools } from './template-render.ts';
export { ggufFileName, jobPrefixes, onnxFolderName, onnxModelFile, type JobPrefixes } from './job-files.ts';
export { checkCheckpoint, checkModelChoice, jobToRun, trainsWholeModel, type CheckedModel } from './model-choice.ts';
export { checkpointModelName, fineTunedModelName, parseModelName, resolveModelName, type NamedModel } from './model-names.ts';
