// Public surface of @ftp/schema: zod schemas of the whole interface, the 422 body builder,
// route contracts of the four services and OpenAPI generation.
// The order of the schema modules below is the order in which their schemas register their ids with zod, which is the
// order of the components in the OpenAPI documents (graders before training, whose rewards build on them): keep it.
export * from './common.ts';
export * from './artifacts.ts';
export * from './preprocessing.ts';
export * from './graders.ts';
export * from './training/index.ts';
export * from './trainers.ts';
export * from './setting-scope.ts';
export * from './export.ts';
export * from './inference.ts';
export * from './evaluations.ts';
export * from './comparisons.ts';
export * from './tinker.ts';
export * from './openai/index.ts';
export { validationDetail, fastifyValidationDetail, issuesFromFastifyValidation, type RequestLocation } from './validation.ts';
export { defineRoute, JSON_BODY_LIMIT, MAX_PARAM_LENGTH, MULTIPART_LIMITS, type RouteContract } from './routes/contract.ts';
export { preprocessingRoutes } from './routes/preprocessing.ts';
export { trainingRoutes } from './routes/training.ts';
export { sweepRoutes } from './routes/sweeps.ts';
export { exportRoutes } from './routes/export.ts';
export { inferenceRoutes } from './routes/inference.ts';
export { openaiRoutes } from './routes/openai/index.ts';
export { tinkerRoutes } from './routes/tinker.ts';
export * from './services.ts';
export {
  buildOpenApiDocument,
  multipartForms,
  openApiOptions,
  openApiTransform,
  openApiTransformObject,
  serializeOpenApiDocument,
  openApiDocumentPath,
  readOpenApiDocument,
  apiDocsPath,
} from './openapi.ts';
export { renderApiDocs } from './api-docs.ts';
export { buildCoreContract, coreContractPath, serializeCoreContract, type CoreContract } from './core-contract.ts';
