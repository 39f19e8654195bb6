/**
 * Model definition module (`--model-def census-wide-deep`): census income Wide&Deep with its
 * category embeddings on the parameter servers (tables `censusWideDeepTableSpecs()`). Works with the
 * CSV reader and the table reader, as the census model does.
 */
import { censusWideDeepDefinition } from './wide-deep.js';

// The loader takes a default export object as the definition (see --model-def in docs/cli.md).
export default censusWideDeepDefinition();
