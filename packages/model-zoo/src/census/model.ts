/**
 * Model definition module (`--model-def`) of the census income model. Works with the CSV reader
 * (records are fields, named by the header) and with the table reader (records are rows).
 */
import { censusDefinition } from './definition.js';

// The loader takes a default export object as the definition (see --model-def in docs/cli.md).
export default censusDefinition();
