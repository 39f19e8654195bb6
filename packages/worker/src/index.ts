export * from './backends/index.js';
export { WorkerError, type WorkerErrorCode } from './errors.js';
export { jsonLineLogger, type LogFields, silentLogger, type WorkerLogger } from './logger.js';
