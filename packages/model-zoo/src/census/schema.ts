/** Numeric columns of the census-like table, with the scale that brings them near [0, 1]. */
export const CENSUS_NUMERIC = [
  { name: 'age', scale: 100 },
  { name: 'education_num', scale: 16 },
  { name: 'hours_per_week', scale: 100 },
  { name: 'capital_gain', scale: 10_000 },
] as const;

/** Categorical columns and their vocabularies (one-hot encoded; unknown values map to zeros). */
export const CENSUS_CATEGORICAL = [
  { name: 'workclass', values: ['private', 'self_employed', 'government', 'without_pay'] },
  { name: 'marital_status', values: ['married', 'never_married', 'divorced', 'widowed'] },
  { name: 'sex', values: ['female', 'male'] },
] as const;

/** The label column: 1 when income exceeds 50K. */
export const CENSUS_LABEL = 'income_over_50k';

/** Every column in file order. */
export const CENSUS_COLUMNS: readonly string[] = [
  ...CENSUS_NUMERIC.map((c) => c.name),
  ...CENSUS_CATEGORICAL.map((c) => c.name),
  CENSUS_LABEL,
];

/** Width of the encoded feature vector. */
export const CENSUS_FEATURES =
  CENSUS_NUMERIC.length + CENSUS_CATEGORICAL.reduce((n, c) => n + c.values.length, 0);

/** One census row with typed values. */
export interface CensusRow {
  readonly age: number;
  readonly education_num: number;
  readonly hours_per_week: number;
  readonly capital_gain: number;
  readonly workclass: string;
  readonly marital_status: string;
  readonly sex: string;
  readonly income_over_50k: number;
}
