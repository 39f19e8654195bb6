/**
 * Model definition module (`--model-def`) of the census income model. Works with the CSV reader
 * (records are fields, named by the header) and with the table reader (records are rows).
 */
import { censusDefinition } from './definition.js';

const definition = censusDefinition();

export const model = definition.model;
export const loss = definition.loss;
export const optimizer = definition.optimizer;
export const datasetFn = definition.datasetFn;
export const evalMetrics = definition.evalMetrics;
