// Where an end user is named in free-form values (a workflow's saved state, an audit entry's
// details, a mail): rows an erasure looks for beyond the columns that hold the user id itself.
// An id of MIN_CONTAINED_CHARS or more is found anywhere inside a text (an e-mail address in a
// mail's body, `seen:<id>` as a key); a shorter one only as a whole value or key, since a short id
// inside longer text is far more often something else.

/** Ids at least this long are found inside longer text; shorter ones only as a whole value. */
export const MIN_CONTAINED_CHARS = 6;

/** The placeholder an anonymised value becomes. */
export const ERASED = '[erased]';

/** LIKE patterns (backslash escapes) that find the user id. */
export interface MentionPatterns {
  /** For the text of a jsonb value (`col::text like ...`): a string value or key. */
  json: string;
  /** For a plain text column. */
  text: string;
  /** For a list of lower-cased addresses framed by commas (`',' || list || ','`): the user id as one of them. */
  address: string;
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, '\\$&');

export function mentionPatterns(userId: string): MentionPatterns {
  // jsonb's text writes strings with JSON's escapes, as JSON.stringify does.
  const quoted = JSON.stringify(userId);
  const address = `%,${escapeLike(userId.toLowerCase())},%`;
  if (userId.length < MIN_CONTAINED_CHARS) return { json: `%${escapeLike(quoted)}%`, text: escapeLike(userId), address };
  return { json: `%${escapeLike(quoted.slice(1, -1))}%`, text: `%${escapeLike(userId)}%`, address };
}

/** Whether a text names the user id (by the rule above). */
export function mentions(text: string, userId: string): boolean {
  return userId.length < MIN_CONTAINED_CHARS ? text === userId : text.includes(userId);
}

/** `value` with every string and key that names the user id replaced by ERASED. */
export function eraseMentions(value: unknown, userId: string): unknown {
  if (typeof value === 'string') return mentions(value, userId) ? ERASED : value;
  if (Array.isArray(value)) return value.map((item) => eraseMentions(item, userId));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    let n = 0;
    for (const [key, item] of Object.entries(value)) {
      // Two erased keys of one object stay apart.
      const name = mentions(key, userId) ? `${ERASED}${n++ ? `-${n}` : ''}` : key;
      out[name] = eraseMentions(item, userId);
    }
    return out;
  }
  return value;
}
