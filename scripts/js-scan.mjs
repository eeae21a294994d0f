// Finds where a JavaScript expression ends in minified source, skipping strings, template
// literals and regex literals, so that the extractors in crates/*/data/ can take one value out
// of a Claude Code release's bundle without a full parser (the bundle is tens of megabytes and
// a parser would have to understand whatever syntax each release's Bun emits).

/** Scanning helpers bound to one source text. */
export function jsScanner(src) {
  const IDENT = /[A-Za-z_$][\w$]*/y;
  const OPEN = { "{": "}", "[": "]", "(": ")" };
  const KEYWORDS = new Set(["return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "instanceof", "yield", "await"]);

  /** Where the expression starting at `i` ends: at the first `,` `;` or unmatched closing bracket
   *  outside brackets, strings, templates and regex literals. */
  function expressionEnd(i) {
    const stack = [];
    let prev = "="; // what came before: decides whether `/` starts a regex
    while (i < src.length) {
      const c = src[i];
      if (c === '"' || c === "'") {
        i = stringEnd(i);
        prev = "x";
        continue;
      }
      if (c === "`") {
        i = templateEnd(i);
        prev = "x";
        continue;
      }
      if (c === "/" && /[=(,[!&|?:{};+\-*%<>~^]|^$/.test(prev)) {
        i = regexEnd(i);
        prev = "x";
        continue;
      }
      if (c in OPEN) stack.push(OPEN[c]);
      else if (c === ")" || c === "]" || c === "}") {
        if (stack.length === 0) return i;
        stack.pop();
      } else if ((c === "," || c === ";") && stack.length === 0) return i;
      if (/[A-Za-z_$]/.test(c)) {
        IDENT.lastIndex = i;
        const word = IDENT.exec(src)[0];
        i += word.length;
        prev = KEYWORDS.has(word) ? "=" : "x";
        continue;
      }
      if (!/\s/.test(c)) prev = c;
      i++;
    }
    throw new Error("unterminated expression");
  }

  function stringEnd(i) {
    const q = src[i++];
    while (src[i] !== q) i += src[i] === "\\" ? 2 : 1;
    return i + 1;
  }

  function regexEnd(i) {
    let inClass = false;
    for (i++; ; i++) {
      const c = src[i];
      if (c === "\\") i++;
      else if (c === "[") inClass = true;
      else if (c === "]") inClass = false;
      else if (c === "/" && !inClass) break;
    }
    for (i++; /[a-z]/.test(src[i]); i++);
    return i;
  }

  function templateEnd(i) {
    for (i++; src[i] !== "`"; i++) {
      if (src[i] === "\\") i++;
      else if (src[i] === "$" && src[i + 1] === "{") i = expressionEnd(i + 2);
    }
    return i + 1;
  }

  function bracketEnd(open) {
    const end = expressionEnd(open + 1);
    return end + 1;
  }

  return { expressionEnd, stringEnd, regexEnd, templateEnd, bracketEnd };
}
