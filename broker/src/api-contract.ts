// What the broker's API promises its clients: which topic and consumer group
// names are valid and how long a page of the topic list is. These are part
// of the contract (a client, a stored file name or a receipt handle depends
// on them), not tunables, so any module may import them; the tunables live in
// constants.ts and reach modules through their options.

export const topicNamePattern = /^[A-Za-z0-9._-]{1,255}$/;
/**
 * Group names end up in file names (<group>.offset.tmp, 11 more bytes) on a
 * file system whose names stop at 255 bytes: 244 is the longest that fits.
 * Longer names were refused at the file system before (500 on consume, acks
 * silently never persisted), so no stored group is longer.
 */
export const groupNameMaxLength = 244;
export const groupNamePattern = new RegExp(`^[A-Za-z0-9._-]{1,${groupNameMaxLength}}$`);

/** GET /v1/topics: topics per page when ?limit is not given, and the most one page holds. */
export const topicListLimitDefault = 100;
export const topicListLimitMax = 1_000;
