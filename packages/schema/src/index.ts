// Public surface of @ftp/schema: zod schemas of the whole interface, the 422 body builder,
// route contracts of the four services and OpenAPI generation.
export * from './common.ts';
export * from './artifacts.ts';
export * from './preprocessing.ts';
export * from './training.ts';
export * from './trainers.ts';
export * from './preflight-report.ts';
export * from './rewards.ts';
export * from './setting-scope.ts';
export * from './graders.ts';
export * from './export.ts';
export * from './inference.ts';
export * from './openai.ts';
export * from './openai-responses.ts';
export { validationDetail, fastifyValidationDetail, issuesFromFastifyValidation, type RequestLocation } from './validation.ts';
export { defineRoute, JSON_BODY_LIMIT, MAX_PARAM_LENGTH, MULTIPART_LIMITS, type RouteContract } from './routes/contract.ts';
export { preprocessingRoutes } from './routes/preprocessing.ts';
export { trainingRoutes } from './routes/training.ts';
export { exportRoutes } from './routes/export.ts';
export { inferenceRoutes } from './routes/inference.ts';
export { openaiRoutes } from './routes/openai.ts';
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
