// Which unknown query parameter is a misspelling of one the route takes.
// Narad v1 ignores parameters it does not know, and clients written for it
// may send stray ones (its own suite sends ?garbage=true); but a typo such as
// ?kye=a ignored stores the record without its key. So by default only a
// near miss of a known name is refused, with the name it probably meant.
// Pure: the hook in query-schema.ts applies it.

/** Lower case with `-` and `_` dropped: receipt-handle, receiptHandle and RECEIPT_HANDLE meet. */
function normalized(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, "");
}

/** Edit distance with adjacent transpositions (kye → key is 1), stopping early past `limit`. */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prevPrev: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, prevPrev[j - 2]! + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > limit) return limit + 1;
    prevPrev = prev;
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The known parameter `name` is a near miss of, if any: the same name in
 * another case or separator style, or within one edit (two for names of
 * six letters or more).
 */
export function nearMissOf(name: string, known: readonly string[]): string | undefined {
  const n = normalized(name);
  let best: { name: string; distance: number } | undefined;
  for (const k of known) {
    const limit = Math.min(k.length, n.length) >= 6 ? 2 : 1;
    const d = editDistance(n, normalized(k), limit);
    if (d <= limit && (best === undefined || d < best.distance)) best = { name: k, distance: d };
  }
  return best?.name;
}
