// Characters that change what a text means to the model but show nothing on screen: bidi
// controls that reverse what follows (U+202E), zero-width spaces and joiners, the byte-order
// mark, and the tag characters (U+E0000 block), which spell whole hidden sentences in ASCII. A
// teammate's memory or a cloned repository's CLAUDE.md can hold them; Claude reads them, a
// person reading the app would not. So names, descriptions and the exact block show them.

/** Unicode's format characters (general category Cf), which is all of the above. */
const FORMAT = /\p{Cf}/u;
const FORMAT_ALL = /(?:[\u{E0020}-\u{E007E}]+|\p{Cf})/gu;
/** A zero-width joiner inside an emoji sequence (👩‍💻) is how the emoji is written, not a trick. */
const EMOJI_BEFORE = /\p{Extended_Pictographic}\u{FE0F}?$/u;

/** Whether `text` holds a character that shows nothing. */
export function hasInvisible(text: string): boolean {
  return FORMAT.test(text) && invisibleCount(text) > 0;
}

/** How many such characters `text` holds (emoji joiners not counted). */
export function invisibleCount(text: string): number {
  let n = 0;
  for (const m of text.matchAll(FORMAT_ALL)) {
    if (isEmojiJoiner(text, m.index!, m[0])) continue;
    n += [...m[0]].length;
  }
  return n;
}

/** `text` with each invisible character written out: `⟦U+202E⟧`, and a run of tag characters
 *  as the text it spells, `⟦hidden: "…"⟧`. */
export function showInvisible(text: string): string {
  if (!FORMAT.test(text)) return text;
  return text.replace(FORMAT_ALL, (run, at: number) => {
    if (isEmojiJoiner(text, at, run)) return run;
    const first = run.codePointAt(0)!;
    if (first >= 0xe0020 && first <= 0xe007e) {
      const spelled = [...run].map((c) => String.fromCodePoint(c.codePointAt(0)! - 0xe0000)).join('');
      return `⟦hidden: ${JSON.stringify(spelled)}⟧`;
    }
    return `⟦U+${first.toString(16).toUpperCase().padStart(4, '0')}⟧`;
  });
}

function isEmojiJoiner(text: string, at: number, run: string): boolean {
  return run === '\u200d' && EMOJI_BEFORE.test(text.slice(Math.max(0, at - 3), at));
}

/** `text` cut into plain runs and invisible ones, each invisible run written out as
 *  `showInvisible` would: for a view that marks them (a diff line) rather than only spelling them. */
export function invisibleParts(text: string): { text: string; hidden: boolean }[] {
  if (!FORMAT.test(text)) return [{ text, hidden: false }];
  const out: { text: string; hidden: boolean }[] = [];
  let at = 0;
  for (const m of text.matchAll(FORMAT_ALL)) {
    if (isEmojiJoiner(text, m.index!, m[0])) continue;
    if (m.index! > at) out.push({ text: text.slice(at, m.index!), hidden: false });
    out.push({ text: showInvisible(m[0]), hidden: true });
    at = m.index! + m[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at), hidden: false });
  return out;
}
