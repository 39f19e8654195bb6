/**
 * The area under the ROC curve, exactly: the Mann-Whitney rank statistic `(R+ - P(P+1)/2) / (P N)`,
 * where `R+` sums the ranks of the positives' scores among all scores, tied scores taking their
 * average rank (so a tie counts one half). `labels` are 0 or 1; NaN when a class is absent.
 */
export function rocAuc(labels: ArrayLike<number>, scores: ArrayLike<number>): number {
  if (labels.length !== scores.length)
    throw new RangeError(
      `Expected as many scores as labels but received ${scores.length} scores for ${labels.length} labels`,
    );
  const order = Array.from({ length: scores.length }, (_, i) => i).sort(
    (a, b) => (scores[a] as number) - (scores[b] as number),
  );
  let positives = 0;
  let positiveRanks = 0;
  for (let start = 0; start < order.length; ) {
    let end = start + 1;
    const score = scores[order[start] as number] as number;
    while (end < order.length && scores[order[end] as number] === score) end++;
    // Ranks start..end-1 (1-based start+1..end) share their average.
    const rank = (start + 1 + end) / 2;
    for (let i = start; i < end; i++) {
      const label = labels[order[i] as number];
      if (label !== 0 && label !== 1)
        throw new RangeError(`Expected a label of 0 or 1 at index ${order[i]} but received ${label}`);
      if (label === 1) {
        positives++;
        positiveRanks += rank;
      }
    }
    start = end;
  }
  const negatives = labels.length - positives;
  if (positives === 0 || negatives === 0) return Number.NaN;
  return (positiveRanks - (positives * (positives + 1)) / 2) / (positives * negatives);
}
