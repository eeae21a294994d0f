//! A port of the parts of `marked` 15 (the Markdown lexer bundled in Claude Code 2.1.19x) that
//! decide what Claude Code does with a memory file: which top-level tokens are HTML comment
//! blocks (stripped) and which text tokens are searched for `@include` paths.
//!
//! Why a port and not a CommonMark parser: Claude Code rebuilds the stripped file from each
//! top-level token's `raw`, and marked's token boundaries differ from CommonMark's in ways
//! that show up in the bytes (a comment block's raw swallows the blank lines after it, a link
//! reference definition's raw is dropped, a list's raw is trimmed, …). The include search
//! likewise depends on marked's exact inline text-token boundaries. So the lexer follows
//! marked's `Lexer`/`Tokenizer` line by line with `gfm: false`, and the regexes are marked's
//! own sources with JavaScript's `\s`, `.`, `\w` and `\d` spelled out.
//!
//! Strings: marked works on UTF-16 strings; this port works on `&str` and byte offsets from
//! regex matches, and converts to UTF-16 units exactly where marked mixes lengths of
//! different strings (the blockquote re-lexing arithmetic and the emphasis delimiter search).

use fancy_regex::{Captures, Regex, RegexBuilder};
use mneme_core::text::{byte_offset_of_utf16, is_js_whitespace, js_trim, utf16_len};
use std::collections::HashSet;
use std::sync::{LazyLock, OnceLock};

mod closers;
pub mod comments;
pub use comments::{html_comment_kept_ranges, html_comment_kept_ranges_rerendered_only_when_removed, strip_html_comments};
use closers::{DelimChain, EmChains, LinkRuns};

/// JavaScript's `\s` (WhiteSpace + LineTerminator), for use inside a character class.
pub const WS: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// Expands the placeholders used in the regex sources below:
/// `⟪S⟫` = JS `\s`, `⟪NS⟫` = JS `\S`, `⟪DOT⟫` = JS `.`, `⟪W⟫` = JS `\w` class body.
fn js(src: &str) -> String {
    src.replace("⟪S⟫", &format!("[{WS}]"))
        .replace("⟪NS⟫", &format!("[^{WS}]"))
        .replace("⟪WSB⟫", WS)
        .replace("⟪DOT⟫", r"[^\n\r\x{2028}\x{2029}]")
        .replace("⟪W⟫", "A-Za-z0-9_")
}

/// Inside a case-insensitive group, wraps every character class that holds no literal
/// letter in `(?-i:…)`. Case-folding a class such as `[\s\S]` or `[^\n]` makes the regex
/// engine fold most of Unicode, which cost tens of milliseconds at start-up; a class without
/// letters matches the same characters either way (JavaScript folds only letters), so the
/// result is unchanged.
fn unfold_letterless_classes(src: &str) -> String {
    if !src.contains("(?i") {
        return src.to_string();
    }
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 64);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                out.push(chars[i]);
                if let Some(&c) = chars.get(i + 1) {
                    out.push(c);
                }
                i += 2;
            }
            '[' => {
                // Find the class's end, skipping escapes; a `]` right after `[` or `[^` is literal.
                let mut j = i + 1;
                if chars.get(j) == Some(&'^') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                let mut has_letter = false;
                while j < chars.len() && chars[j] != ']' {
                    if chars[j] == '\\' {
                        // `\x{…}` and `\p{…}` run to their brace; other escapes are two chars.
                        if matches!(chars.get(j + 1), Some('x' | 'p' | 'P')) && chars.get(j + 2) == Some(&'{') {
                            while j < chars.len() && chars[j] != '}' {
                                j += 1;
                            }
                        } else {
                            j += 1;
                        }
                    } else if chars[j].is_ascii_alphabetic() {
                        has_letter = true;
                    }
                    j += 1;
                }
                let class: String = chars[i..=j.min(chars.len() - 1)].iter().collect();
                if has_letter {
                    out.push_str(&class);
                } else {
                    out.push_str("(?-i:");
                    out.push_str(&class);
                    out.push(')');
                }
                i = j + 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn build(src: &str) -> Regex {
    RegexBuilder::new(&unfold_letterless_classes(&js(src)))
        // marked's regexes are backtracking JavaScript regexes; give the VM room before it
        // gives up on a pathological input (a give-up counts as "no match").
        .backtrack_limit(10_000_000)
        .build()
        .unwrap_or_else(|e| panic!("marked regex {src}: {e}"))
}

macro_rules! re {
    ($name:ident, $src:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| build($src));
    };
}

// ---- block rules (marked 15.0.12 `block.normal`, gfm: false) -------------------------------
re!(NEWLINE, r"^(?:[ \t]*(?:\n|$))+");
re!(BLOCK_CODE, r"^((?: {4}| {0,3}\t)[^\n]+(?:\n(?:[ \t]*(?:\n|$))*)?)+");
re!(FENCES, r"^ {0,3}(`{3,}(?=[^`\n]*(?:\n|$))|~{3,})([^\n]*)(?:\n|$)(?:|([\s\S]*?)(?:\n|$))(?: {0,3}\1[~`]* *(?=\n|$)|$)");
re!(HEADING, r"^ {0,3}(#{1,6})(?=⟪S⟫|$)(⟪DOT⟫*)(?:\n+|$)");
re!(HR, r"^ {0,3}((?:-[\t ]*){3,}|(?:_[ \t]*){3,}|(?:\*[ \t]*){3,})(?:\n+|$)");
const TAGS: &str = "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|meta|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul";
/// The paragraph continuation guard: a line starting one of these interrupts a paragraph.
/// `html_indent` is what may precede an HTML start: nothing in marked 15, up to three spaces
/// in the blockquote rule of the marked Claude Code bundles from 2.1.331.
fn para_interrupt_with(html_indent: &str) -> String {
    format!(
        r"(?! {{0,3}}((?:-[\t ]*){{3,}}|(?:_[ \t]*){{3,}}|(?:\*[ \t]*){{3,}})(?:\n+|$)| {{0,3}}#{{1,6}}(?:⟪S⟫|$)| {{0,3}}>| {{0,3}}(?:`{{3,}}(?=[^`\n]*\n)|~{{3,}})[^\n]*\n| {{0,3}}(?:[*+-]|1[.)]) |{html_indent}(?:</?(?:{TAGS})(?: +|\n|/?>)|<(?:script|pre|style|textarea|!--))| +\n)"
    )
}
fn para_interrupt() -> String {
    para_interrupt_with("")
}
static PARAGRAPH: LazyLock<Regex> =
    LazyLock::new(|| build(&format!(r"^([^\n]+(?:\n{}[^\n]+)*)", para_interrupt())));
/// marked's blockquote rule; [`blockquote_len`] is it written out (the property test
/// `blockquote_scanner_matches_the_regex` holds the two together).
#[cfg(test)]
static BLOCKQUOTE: LazyLock<Regex> = LazyLock::new(|| {
    build(&format!(r"^( {{0,3}}> ?(([^\n]+(?:\n{}[^\n]+)*)|[^\n]*)(?:\n|$))+", para_interrupt()))
});
/// From Claude Code 2.1.331: a lazy continuation line that starts an HTML block after up to
/// three spaces (`  <!-- c -->`) ends the blockquote, as in marked 18; top-level paragraphs
/// are not affected (measured with the real binaries).
#[cfg(test)]
static BLOCKQUOTE_331: LazyLock<Regex> = LazyLock::new(|| {
    build(&format!(r"^( {{0,3}}> ?(([^\n]+(?:\n{}[^\n]+)*)|[^\n]*)(?:\n|$))+", para_interrupt_with(" {0,3}")))
});
/// The line starts that end a blockquote's lazy continuation: the paragraph guard (its
/// negative lookahead's body, anchored), in marked 15 and from 2.1.331.
static QUOTE_INTERRUPT: LazyLock<Regex> = LazyLock::new(|| build(&anchored_interrupt(&para_interrupt())));
static QUOTE_INTERRUPT_331: LazyLock<Regex> =
    LazyLock::new(|| build(&anchored_interrupt(&para_interrupt_with(" {0,3}"))));
fn anchored_interrupt(guard: &str) -> String {
    let body = guard.strip_prefix("(?!").and_then(|g| g.strip_suffix(')')).expect("a negative lookahead");
    format!("^(?:{body})")
}

/// The length in bytes of marked's blockquote match at the start of `src`,
/// `^( {0,3}> ?(([^\n]+(?:\n(?!interrupt)[^\n]+)*)|[^\n]*)(?:\n|$))+`, written out: each
/// quoted line, then while it has text the lazy lines after it that are not empty and start
/// nothing that interrupts a paragraph. Every branch the regex tries first succeeds, so the
/// first path is the match. The regex ran in fancy-regex's backtracking VM over the whole
/// quote at every nesting level, the most of a deep quote's time.
fn blockquote_len(src: &str, interrupt: &Regex) -> Option<usize> {
    let bytes = src.as_bytes();
    let line_end = |from: usize| src[from..].find('\n').map_or(src.len(), |i| from + i);
    let mut pos = 0;
    let mut matched = false;
    while let Some(after) = after_quote_marker(&src[pos..]) {
        let mut p = pos + after;
        if bytes.get(p) == Some(&b' ') {
            p += 1;
        }
        let mut end = line_end(p);
        if end > p {
            while end < src.len() {
                let next = end + 1;
                let next_end = line_end(next);
                if next_end == next || test(interrupt, &src[next..]) {
                    break;
                }
                end = next_end;
            }
        }
        // `(?:\n|$)`: the line ends in a newline or the input does.
        pos = (end + 1).min(src.len());
        matched = true;
    }
    matched.then_some(pos)
}
re!(LIST, r"^( {0,3}(?:[*+-]|[0-9]{1,9}[.)]))([ \t][^\n]+?)?(?:\n|$)");
static HTML: LazyLock<Regex> = LazyLock::new(|| {
    build(&format!(
        r#"^(?i: {{0,3}}(?:<(script|pre|style|textarea)[⟪WSB⟫>][\s\S]*?(?:</\1>[^\n]*\n+|$)|<!--(?:-?>|[\s\S]*?(?:-->|$))[^\n]*(\n+|$)|<\?[\s\S]*?(?:\?>\n*|$)|<![A-Z][\s\S]*?(?:>\n*|$)|<!\[CDATA\[[\s\S]*?(?:\]\]>\n*|$)|</?({TAGS})(?: +|\n|/?>)[\s\S]*?(?:(?:\n[ \t]*)+\n|$)|<(?!script|pre|style|textarea)([a-z][⟪W⟫-]*)(?: +[a-zA-Z:_][⟪W⟫.:-]*(?: *= *"[^"\n]*"| *= *'[^'\n]*'| *= *[^⟪WSB⟫"'=<>`]+)?)*? */?>(?=[ \t]*(?:\n|$))[\s\S]*?(?:(?:\n[ \t]*)+\n|$)|</(?!script|pre|style|textarea)[a-z][⟪W⟫-]*⟪S⟫*>(?=[ \t]*(?:\n|$))[\s\S]*?(?:(?:\n[ \t]*)+\n|$)))"#
    ))
});
re!(DEF, r#"^ {0,3}\[((?!⟪S⟫*\])(?:\\⟪DOT⟫|[^\[\]\\])+)\]: *(?:\n[ \t]*)?([^<⟪WSB⟫][^⟪WSB⟫]*|<⟪DOT⟫*?>)(?:(?: +(?:\n[ \t]*)?| *\n[ \t]*)((?:"(?:\\"?|[^"\\])*"|'[^'\n]*(?:\n[^'\n]+)*\n?'|\([^()]*\))))? *(?:\n+|$)"#);
re!(LHEADING, r"^(?!(?:[*+-]|[0-9]{1,9}[.)]) |(?: {4}| {0,3}\t)| {0,3}(?:`{3,}|~{3,})| {0,3}>| {0,3}#{1,6}| {0,3}<[^\n>]+>\n)((?:⟪DOT⟫|\n(?!⟪S⟫*?\n|(?:[*+-]|[0-9]{1,9}[.)]) |(?: {4}| {0,3}\t)| {0,3}(?:`{3,}|~{3,})| {0,3}>| {0,3}#{1,6}| {0,3}<[^\n>]+>\n))+?)\n {0,3}(=+|-+) *(?:\n+|$)");
re!(BLOCK_TEXT, r"^[^\n]+");

// ---- `other` helpers used by the tokenizers --------------------------------------------------
re!(BLOCKQUOTE_SETEXT, r"\n {0,3}((?:=+|-+) *)(?=\n|$)");
re!(BLANK_LINE, r"^[ \t]*$");
re!(LIST_ITEM_STAR, r"^( {0,3}\*)((?:[\t ][^\n]*)?(?:\n|$))");
re!(LIST_ITEM_PLUS, r"^( {0,3}\+)((?:[\t ][^\n]*)?(?:\n|$))");
re!(LIST_ITEM_DASH, r"^( {0,3}\-)((?:[\t ][^\n]*)?(?:\n|$))");
re!(LIST_ITEM_DOT, r"^( {0,3}[0-9]{1,9}\.)((?:[\t ][^\n]*)?(?:\n|$))");
re!(LIST_ITEM_PAREN, r"^( {0,3}[0-9]{1,9}\))((?:[\t ][^\n]*)?(?:\n|$))");

/// marked builds these per list item from the item's indent; the indent only enters as
/// `min(3, indent - 1)`, so four variants cover every case. Each regex is compiled the first
/// time a line could match it (see [`after_indent`]: every one starts ` {0,n}X` with n ≤ 3).
struct IndentRules {
    n: usize,
    next_bullet: OnceLock<Regex>,
    hr: OnceLock<Regex>,
    fences_begin: OnceLock<Regex>,
    heading_begin: OnceLock<Regex>,
    html_begin: OnceLock<Regex>,
}
static INDENT_RULES: [IndentRules; 4] = [IndentRules::new(0), IndentRules::new(1), IndentRules::new(2), IndentRules::new(3)];

impl IndentRules {
    const fn new(n: usize) -> IndentRules {
        IndentRules {
            n,
            next_bullet: OnceLock::new(),
            hr: OnceLock::new(),
            fences_begin: OnceLock::new(),
            heading_begin: OnceLock::new(),
            html_begin: OnceLock::new(),
        }
    }
    fn next_bullet(&self, line: &str) -> bool {
        may(matches!(after_indent(line), Some(b'*' | b'+' | b'-' | b'0'..=b'9')))
            && test(
                self.next_bullet.get_or_init(|| build(&format!(r"^ {{0,{}}}(?:[*+-]|[0-9]{{1,9}}[.)])((?:[ \t][^\n]*)?(?:\n|$))", self.n))),
                line,
            )
    }
    fn hr(&self, line: &str) -> bool {
        may(matches!(after_indent(line), Some(b'-' | b'_' | b'*')))
            && test(
                self.hr.get_or_init(|| build(&format!(r"^ {{0,{}}}((?:- *){{3,}}|(?:_ *){{3,}}|(?:\* *){{3,}})(?:\n+|$)", self.n))),
                line,
            )
    }
    fn fences_begin(&self, line: &str) -> bool {
        may(matches!(after_indent(line), Some(b'`' | b'~')))
            && test(self.fences_begin.get_or_init(|| build(&format!(r"^ {{0,{}}}(?:```|~~~)", self.n))), line)
    }
    fn heading_begin(&self, line: &str) -> bool {
        may(after_indent(line) == Some(b'#')) && test(self.heading_begin.get_or_init(|| build(&format!(r"^ {{0,{}}}#", self.n))), line)
    }
    fn html_begin(&self, line: &str) -> bool {
        may(after_indent(line) == Some(b'<'))
            && test(self.html_begin.get_or_init(|| build(&format!(r"^(?i: {{0,{}}}<(?:[a-z]⟪DOT⟫*>|!--))", self.n))), line)
    }
}

// ---- inline rules (marked 15.0.12 `inline.normal`) ------------------------------------------
re!(ESCAPE, r##"^\\([!"#$%&'()*+,\-./:;<=>?@\[\]\\^_`{|}~])"##);
re!(TAG, r#"^(?:<!--(?:-?>|[\s\S]*?-->)|</[a-zA-Z][⟪W⟫:-]*⟪S⟫*>|<[a-zA-Z][⟪W⟫-]*(?:⟪S⟫+[a-zA-Z:_][⟪W⟫.:-]*(?:⟪S⟫*=⟪S⟫*"[^"]*"|⟪S⟫*=⟪S⟫*'[^']*'|⟪S⟫*=⟪S⟫*[^⟪WSB⟫"'=<>`]+)?)*?⟪S⟫*/?>|<\?[\s\S]*?\?>|<![a-zA-Z]+⟪S⟫[\s\S]*?>|<!\[CDATA\[[\s\S]*?\]\]>)"#);
const INLINE_LABEL: &str = r"(?:\[(?:\\⟪DOT⟫|[^\[\]\\])*\]|\\⟪DOT⟫|`[^`]*`|[^\[\]\\`])*?";
const BLOCK_LABEL: &str = r"(?!⟪S⟫*\])(?:\\⟪DOT⟫|[^\[\]\\])+";
/// marked's inline `link` rule, `^!?\[(label)\]\(⟪S⟫*(destination)(title)?⟪S⟫*\)`, in its three
/// parts (see [`LinkRuns`] for why). The label's end is unique (no alternative of the label
/// can take the `]` of `](`), so the label is matched once and the destination tried after it.
const LINK_TAIL: &str = r#"(?:(?:[ \t]*(?:\n[ \t]*)?)("(?:\\"?|[^"\\])*"|'(?:\\'?|[^'\\])*'|\((?:\\\)?|[^)\\])*\)))?⟪S⟫*\)"#;
static LINK_LABEL: LazyLock<Regex> = LazyLock::new(|| build(&format!(r"^!?\[({INLINE_LABEL})\]\(⟪S⟫*")));
/// The destination in angle brackets, then the rest: tried first, as the rule's first alternative.
static LINK_ANGLE: LazyLock<Regex> = LazyLock::new(|| build(&format!(r"^(<(?:\\⟪DOT⟫|[^\n<>\\])+>){LINK_TAIL}")));
/// The bare destination (greedy: the longest after which the rest matches), then the rest.
static LINK_BARE: LazyLock<Regex> = LazyLock::new(|| build(&format!(r"^([^ \t\n\x00-\x1f]*){LINK_TAIL}")));
/// The rule whole, as marked writes it: the reference the three parts are tested against.
#[cfg(test)]
static LINK: LazyLock<Regex> = LazyLock::new(|| {
    build(&format!(
        r#"^!?\[({INLINE_LABEL})\]\(⟪S⟫*(<(?:\\⟪DOT⟫|[^\n<>\\])+>|[^ \t\n\x00-\x1f]*)(?:(?:[ \t]*(?:\n[ \t]*)?)("(?:\\"?|[^"\\])*"|'(?:\\'?|[^'\\])*'|\((?:\\\)?|[^)\\])*\)))?⟪S⟫*\)"#
    ))
});
static REFLINK: LazyLock<Regex> =
    LazyLock::new(|| build(&format!(r"^!?\[({INLINE_LABEL})\]\[({BLOCK_LABEL})\]")));
static NOLINK: LazyLock<Regex> = LazyLock::new(|| build(&format!(r"^!?\[({BLOCK_LABEL})\](?:\[\])?")));
static REFLINK_SEARCH: LazyLock<Regex> = LazyLock::new(|| {
    build(&format!(r"!?\[({INLINE_LABEL})\]\[({BLOCK_LABEL})\]|!?\[({BLOCK_LABEL})\](?:\[\])?(?!\()"))
});
re!(EM_STRONG_LDELIM, r"^(?:\*+(?:((?!\*)[\p{P}\p{S}])|[^⟪WSB⟫*])|_+(?:((?!_)[\p{P}\p{S}])|([^⟪WSB⟫_])))");
re!(EM_STRONG_RDELIM_AST, r"^[^_*]*?__[^_*]*?\*[^_*]*?(?=__)|[^*]+(?=[^*])|(?!\*)[\p{P}\p{S}](\*+)(?=⟪S⟫|$)|[^⟪WSB⟫\p{P}\p{S}](\*+)(?!\*)(?=[⟪WSB⟫\p{P}\p{S}]|$)|(?!\*)[⟪WSB⟫\p{P}\p{S}](\*+)(?=[^⟪WSB⟫\p{P}\p{S}])|⟪S⟫(\*+)(?!\*)(?=[\p{P}\p{S}])|(?!\*)[\p{P}\p{S}](\*+)(?!\*)(?=[\p{P}\p{S}])|[^⟪WSB⟫\p{P}\p{S}](\*+)(?=[^⟪WSB⟫\p{P}\p{S}])");
re!(EM_STRONG_RDELIM_UND, r"^[^_*]*?\*\*[^_*]*?_[^_*]*?(?=\*\*)|[^_]+(?=[^_])|(?!_)[\p{P}\p{S}](_+)(?=⟪S⟫|$)|[^⟪WSB⟫\p{P}\p{S}](_+)(?!_)(?=[⟪WSB⟫\p{P}\p{S}]|$)|(?!_)[⟪WSB⟫\p{P}\p{S}](_+)(?=[^⟪WSB⟫\p{P}\p{S}])|⟪S⟫(_+)(?!_)(?=[\p{P}\p{S}])|(?!_)[\p{P}\p{S}](_+)(?!_)(?=[\p{P}\p{S}])");
re!(PUNCTUATION, r"^((?![*_])[⟪WSB⟫\p{P}\p{S}])");
re!(UNICODE_ALNUM, r"[\p{L}\p{N}]");
re!(ANY_PUNCTUATION, r"\\([\p{P}\p{S}])");
re!(BLOCK_SKIP, r"\[[^\[\]]*?\]\((?:\\⟪DOT⟫|[^\\\(\)]|\((?:\\⟪DOT⟫|[^\\\(\)])*\))*\)|`[^`]*?`|<[^<>]*?>");
re!(INLINE_CODE, r"^(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)");
re!(BR, r"^( {2,}|\\)\n(?!⟪S⟫*$)");
re!(AUTOLINK, r"^<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^⟪WSB⟫\x00-\x1f<>]*|[a-zA-Z0-9.!#$%&'*+/=?_`{|}~-]+(@)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+(?![-_]))>");
// marked's `(?=[\\<!\[`*_]|\b_|$)`: the `\b_` branch is implied by `_` in the class.
re!(INLINE_TEXT, r"^(`+|[^`])(?:(?= {2,}\n)|[\s\S]*?(?:(?=[\\<!\[`*_]|$)|[^ ](?= {2,}\n)))");
re!(OUTPUT_LINK_REPLACE, r"\\([\[\]])");
re!(MULTIPLE_SPACE, r"⟪S⟫+");

/// marked token types that matter to Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Space,
    Code,
    Heading,
    Hr,
    Blockquote,
    List,
    ListItem,
    Html,
    Paragraph,
    Text,
    Escape,
    Link,
    Image,
    Em,
    Strong,
    Codespan,
    Br,
}

/// One marked token: the fields Claude Code reads (`type`, `raw`, `text`, `tokens`, `items`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub raw: String,
    pub text: String,
    pub tokens: Vec<Token>,
    pub items: Vec<Token>,
    /// Set on block tokens whose `tokens` marked fills from `text` by inline lexing after the
    /// block pass (`lexer.inline(text)`): the inline queue.
    inline_pending: bool,
}

/// A token tree as deep as [`MAX_BLOCK_NESTING`] is taken apart with a loop: the drop the compiler
/// writes recurses once per level.
impl Drop for Token {
    fn drop(&mut self) {
        if self.tokens.is_empty() && self.items.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.tokens);
        pending.append(&mut self.items);
        while let Some(mut t) = pending.pop() {
            pending.append(&mut t.tokens);
            pending.append(&mut t.items);
        }
    }
}

impl Token {
    /// Marked's "merge into the previous token": both texts continue on a new line.
    fn continue_with(&mut self, raw: &str, text: &str) {
        self.raw.push('\n');
        self.raw.push_str(raw);
        self.text.push('\n');
        self.text.push_str(text);
    }

    fn new(kind: Kind, raw: impl Into<String>) -> Self {
        Token { kind, raw: raw.into(), text: String::new(), tokens: Vec::new(), items: Vec::new(), inline_pending: false }
    }
    fn with_text(kind: Kind, raw: impl Into<String>, text: impl Into<String>) -> Self {
        let mut t = Token::new(kind, raw);
        t.text = text.into();
        t
    }
    fn inline(kind: Kind, raw: impl Into<String>, text: impl Into<String>) -> Self {
        let mut t = Token::with_text(kind, raw, text);
        t.inline_pending = true;
        t
    }
}

/// Why a document was not lexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexError {
    /// marked throws `Infinite loop on byte: N` when no tokenizer matches; Claude Code's reader
    /// catches it and drops the file, as Mneme does.
    Stuck { byte: u32 },
    /// Nested past [`MAX_BLOCK_NESTING`] or [`MAX_INLINE_NESTING`] (`limit`, the one met), or
    /// so deep and long that lexing it would take more than [`DEEP_BLOCK_BUDGET`] (`limit`, the
    /// depth reached): Mneme leaves the file out where Claude Code (whose limit is its
    /// JavaScript stack) may still load it.
    TooDeep { limit: usize },
}

/// The byte after a block's indent of at most three spaces; `None` after four or more, or at
/// the end. A block rule written ` {0,3}X…` can match only where this is `Some(X)`, so the
/// tokenizers below look at it before running (and, the first time, compiling) the rule's
/// regex: compiling all of marked's rules takes ~9 ms, several times a small repository's
/// whole `mneme context`, and a document needs only the rules its lines can start.
/// These checks only skip what cannot match, so the tokens are the same.
fn after_indent(src: &str) -> Option<u8> {
    let n = src.bytes().take_while(|&b| b == b' ').count();
    if n > 3 {
        None
    } else {
        src.as_bytes().get(n).copied()
    }
}

/// Whether a line of `src` after the first can be a setext underline (` {0,3}` then `=` or
/// `-`) before the paragraph ends at a line of only whitespace: what `LHEADING` needs.
///
/// `Err` carries how much of `src` is left where the look stopped (a blank line, or 0 at the
/// end): every later view of the same text longer than that has no underline either, since its
/// lines were all looked at here. Text of a list item is lexed a line at a time, and a million
/// lines without a blank one were otherwise looked through once per line.
fn underline_ahead(src: &str) -> Result<(), usize> {
    let mut lines = src.split('\n');
    let first = lines.next().unwrap_or_default();
    let mut at = first.len() + 1;
    for line in lines {
        if matches!(after_indent(line), Some(b'=' | b'-')) {
            return Ok(());
        }
        // A whitespace-only line ends the text the heading could span (when a newline follows
        // it; the last line has nothing after it anyway).
        if line.chars().all(is_js_whitespace) {
            return Err(src.len() - at);
        }
        at += line.len() + 1;
    }
    Err(0)
}

/// `cond`, a check that a rule can match here, or `true` in the tests that lex without the
/// checks to show they change nothing.
fn may(cond: bool) -> bool {
    cond || !checks_on()
}
#[cfg(not(test))]
fn checks_on() -> bool {
    true
}
#[cfg(test)]
thread_local! {
    static CHECKS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}
#[cfg(test)]
fn checks_on() -> bool {
    CHECKS.with(|c| c.get())
}

/// [`EM_STRONG_LDELIM`] at the start of `src`, which starts with a run of `run` bytes of `*` or
/// `_` ([`DelimRun`]; 0: it starts with neither): its captures and the whole match. The rule is anchored and reads a run
/// and the one character after it, but it walks the rest of the run at each of the run's
/// positions (a line of 20,000 `*` took 20 s unoptimised). Only the whole run can match (a
/// shorter one is followed by the same delimiter, which both branches refuse), so the rule runs
/// from the run's last character, which captures the same groups, and the match is the whole
/// run with the character after it.
fn em_opener(src: &str, run: usize) -> Option<(Captures<'_, str>, &str)> {
    if run == 0 {
        return None;
    }
    // Its ends only: checking the whole run would walk it again at each of its characters.
    debug_assert!(src.as_bytes()[run - 1] == src.as_bytes()[0] && src.as_bytes().get(run) != src.as_bytes().first());
    let m = caps(&EM_STRONG_LDELIM, &src[run - 1..])?;
    let whole = &src[..run - 1 + m.get(0).map_or(1, |g| g.end())];
    Some((m, whole))
}

/// Where the run of `*` or `_` the inline lexer stands in ends. The lexer steps through a run
/// one character at a time (marked's text rule takes one delimiter), and counting the rest of
/// the run at each step made a line of them quadratic; positions only move forward, so the end
/// found once answers every position inside the run.
#[derive(Default)]
struct DelimRun {
    delim: u8,
    end: usize,
}

impl DelimRun {
    /// The length of the run of `rest[0]` at `at` (`rest` is the text from `at` on).
    fn at(&mut self, at: usize, rest: &str) -> usize {
        let first = rest.as_bytes()[0];
        if first != self.delim || at >= self.end {
            self.delim = first;
            self.end = at + rest.bytes().take_while(|&b| b == first).count();
        }
        self.end - at
    }
}

fn caps<'t>(re: &Regex, s: &'t str) -> Option<Captures<'t, str>> {
    re.captures(s).ok().flatten()
}
fn test(re: &Regex, s: &str) -> bool {
    re.is_match(s).unwrap_or(false)
}
fn group<'t>(c: &Captures<'t, str>, i: usize) -> Option<&'t str> {
    c.get(i).map(|m| m.as_str())
}
fn group_or_empty<'t>(c: &Captures<'t, str>, i: usize) -> &'t str {
    group(c, i).unwrap_or("")
}

/// JavaScript `str.substring(start)` with `start` in UTF-16 units, clamped.
fn substring_from(s: &str, units: usize) -> &str {
    &s[byte_offset_of_utf16(s, units)..]
}
/// marked's `src.substring(raw.length)`: what is left after a token. Its raw text is almost
/// always the start of `src` itself, and then the answer is a slice found without counting
/// UTF-16 units twice over the token (which, at every level of a deep quote, was a third of
/// the lexer's time).
fn after_raw<'s>(src: &'s str, raw: &str) -> &'s str {
    match src.strip_prefix(raw) {
        Some(rest) => rest,
        None => substring_from(src, utf16_len(raw)),
    }
}
/// JavaScript `str.substring(0, end)`.
fn substring_to(s: &str, units: usize) -> &str {
    &s[..byte_offset_of_utf16(s, units)]
}

/// marked's `rtrim(str, c)`: drop trailing `c` characters.
fn rtrim_char(s: &str, c: char) -> &str {
    s.trim_end_matches(c)
}
fn js_trim_end(s: &str) -> &str {
    s.trim_end_matches(is_js_whitespace)
}
/// `str.search(/[^ ]/)`: UTF-16 index of the first non-space, or -1.
fn search_non_space(s: &str) -> isize {
    match s.char_indices().find(|(_, c)| *c != ' ') {
        Some((i, _)) => utf16_len(&s[..i]) as isize,
        None => -1,
    }
}
fn first_line(s: &str) -> &str {
    s.split('\n').next().unwrap_or("")
}

pub struct Lexer {
    /// Link reference definition labels (`tokens.links`), lower-cased as marked keys them.
    links: HashSet<String>,
    top: bool,
    /// Current nesting of block lexing calls (in the block pass) or of inline lexing calls (in
    /// the inline pass, which runs after it).
    depth: usize,
    /// What is left of [`DEEP_BLOCK_BUDGET`].
    deep_budget: usize,
    /// Length of the normalized source, to turn what is left of it into an offset.
    top_len: usize,
    /// Block levels past which the lex fails ([`MAX_BLOCK_NESTING`] or, on Node, less).
    max_depth: usize,
    /// Top-level link definitions' byte ranges in the normalized source.
    skipped: Vec<std::ops::Range<usize>>,
    /// What ends a blockquote's lazy lines in the release being reproduced, compiled at its
    /// first use (a `&Regex` here would compile it for every document).
    quote_interrupt: &'static LazyLock<Regex>,
}

/// Which release's lexer rules to follow where they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// [`BLOCKQUOTE_331`]: indented HTML ends a blockquote's lazy continuation.
    pub blockquote_ends_at_indented_html: bool,
    /// Block nesting past which the lex fails: where the release's lexer runs out of stack
    /// (`Profile::block_nesting`; [`MAX_BLOCK_NESTING`] for the newest releases).
    pub max_block_nesting: usize,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect { blockquote_ends_at_indented_html: false, max_block_nesting: MAX_BLOCK_NESTING }
    }
}

/// Block nesting (`>>>>…`, `- - - …`, `> - > - …`) deeper than a release's limit fails the lex
/// ([`LexError::TooDeep`]) and the file is left out, saying why. Claude Code drops a file only
/// when JavaScript runs out of stack, at a depth that depends on the release (its runtime and
/// the size of its lexer's frames), so the limits are release facts kept with the others in
/// `mneme_core::versions` (`Profile::block_nesting`). This one, the newest binaries', is the
/// default. The recursion grows its stack on the heap ([`grow`]).
pub const MAX_BLOCK_NESTING: usize = mneme_core::versions::BLOCK_NESTING_BINARY;

/// Inline nesting (`*a *a …`, `**a **a …`, `[[[…`) deeper than this fails the lex. Claude Code
/// goes to about 10,000 levels, but each inline level keeps a masked copy of its text and
/// emphasis searches it for closers (1,000 levels take 0.8 s and 133 MB here, 4,000 take 13 s
/// and 2 GB), so the port stops where a hostile file still costs a tenth of a second.
pub const MAX_INLINE_NESTING: usize = 400;

/// Block levels that never count against [`DEEP_BLOCK_BUDGET`]: the old single limit, so every
/// file that lexed before lexes as it did.
const FREE_BLOCK_DEPTH: usize = 400;

/// Past [`FREE_BLOCK_DEPTH`] block levels, the bytes of text the lexer may still hand to
/// nested block lexing before it gives up ([`LexError::TooDeep`]). Each level keeps its own
/// copy of its text, so a deep quote costs the square of its depth (11,000 levels are ~60 MB
/// of it), and marked re-lexes a whole quote for every lazy line after it, which is cubic: the
/// budget stops such a file after about a second instead of minutes. No ordinary file, however
/// large, meets it.
const DEEP_BLOCK_BUDGET: usize = 64 << 20;

/// Runs `f` with at least [`RED_ZONE`] of stack left, moving to a fresh heap-allocated
/// segment when the thread's own stack runs low: each nesting level of the lexer costs a few
/// kilobytes of frames, far past a 2 MiB thread stack at [`MAX_INLINE_NESTING`].
pub fn grow<R>(f: impl FnOnce() -> R) -> R {
    const RED_ZONE: usize = 256 * 1024;
    const SEGMENT: usize = 8 * 1024 * 1024;
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// `new Lexer({ gfm: false }).lex(src)`.
pub fn lex(src: &str) -> Result<Vec<Token>, LexError> {
    lex_with_skipped(src).map(|(tokens, _)| tokens)
}

/// [`lex`], plus the byte ranges of the LF-normalized source that no top-level token holds
/// (link definitions, which are not tokens). With them, the top-level tokens' raw text tiles
/// the normalized source, so a caller can place every token in the file.
pub fn lex_with_skipped(src: &str) -> Result<(Vec<Token>, Vec<std::ops::Range<usize>>), LexError> {
    lex_with_skipped_as(src, Dialect::default())
}

/// [`lex_with_skipped`] with a release's [`Dialect`].
pub fn lex_with_skipped_as(src: &str, dialect: Dialect) -> Result<(Vec<Token>, Vec<std::ops::Range<usize>>), LexError> {
    let src = src.replace("\r\n", "\n").replace('\r', "\n");
    let quote_interrupt: &'static LazyLock<Regex> =
        if dialect.blockquote_ends_at_indented_html { &QUOTE_INTERRUPT_331 } else { &QUOTE_INTERRUPT };
    let mut lexer = Lexer {
        links: HashSet::new(),
        top: true,
        depth: 0,
        max_depth: dialect.max_block_nesting,
        deep_budget: DEEP_BLOCK_BUDGET,
        top_len: src.len(),
        skipped: Vec::new(),
        quote_interrupt,
    };
    let mut tokens = Vec::new();
    lexer.block_tokens(&src, &mut tokens, false)?;
    lexer.run_inline_queue(&mut tokens)?;
    Ok((tokens, lexer.skipped))
}

impl Lexer {
    /// The inline queue: marked lexes inline content only after the whole block pass, so
    /// link definitions anywhere in the file are known. Lexing each pending token from its
    /// final `text` is equivalent to marked's queue (merges rewrite the queued source).
    fn run_inline_queue(&mut self, tokens: &mut [Token]) -> Result<(), LexError> {
        grow(|| self.run_inline_queue_inner(tokens))
    }

    fn run_inline_queue_inner(&mut self, tokens: &mut [Token]) -> Result<(), LexError> {
        for t in tokens.iter_mut() {
            if t.inline_pending {
                t.tokens = self.inline_tokens(&t.text)?;
                t.inline_pending = false;
            } else {
                self.run_inline_queue(&mut t.tokens)?;
            }
            self.run_inline_queue(&mut t.items)?;
        }
        Ok(())
    }

    fn block_tokens(&mut self, src: &str, tokens: &mut Vec<Token>, last_paragraph_clipped: bool) -> Result<(), LexError> {
        if self.depth >= self.max_depth {
            return Err(LexError::TooDeep { limit: self.max_depth });
        }
        if self.depth >= FREE_BLOCK_DEPTH {
            self.deep_budget = self.deep_budget.checked_sub(src.len()).ok_or(LexError::TooDeep { limit: self.depth })?;
        }
        self.depth += 1;
        let r = grow(|| self.block_tokens_inner(src, tokens, last_paragraph_clipped));
        self.depth -= 1;
        r
    }

    fn block_tokens_inner(&mut self, src: &str, tokens: &mut Vec<Token>, mut last_paragraph_clipped: bool) -> Result<(), LexError> {
        // A view of what is left, not a copy of it per token (that was quadratic: a file of
        // 800,000 `#` lines took 24 s).
        let mut src: &str = src;
        let mut no_underline_past = None;
        while !src.is_empty() {
            if let Some(token) = self.space(src) {
                src = after_raw(src, &token.raw);
                match tokens.last_mut() {
                    Some(last) if token.raw.len() == 1 => last.raw.push('\n'),
                    _ => tokens.push(token),
                }
                continue;
            }
            if let Some(token) = self.code(src) {
                src = after_raw(src, &token.raw);
                match tokens.last_mut() {
                    Some(last) if matches!(last.kind, Kind::Paragraph | Kind::Text) => {
                        last.continue_with(&token.raw, &token.text);
                    }
                    _ => tokens.push(token),
                }
                continue;
            }
            let simple = self
                .fences(src)
                .or_else(|| self.heading(src))
                .or_else(|| self.hr(src));
            if let Some(token) = simple {
                src = after_raw(src, &token.raw);
                tokens.push(token);
                continue;
            }
            if let Some(token) = self.blockquote(src)? {
                src = after_raw(src, &token.raw);
                tokens.push(token);
                continue;
            }
            if let Some(token) = self.list(src)? {
                src = after_raw(src, &token.raw);
                tokens.push(token);
                continue;
            }
            if let Some(token) = self.html(src) {
                src = after_raw(src, &token.raw);
                tokens.push(token);
                continue;
            }
            if let Some((raw, tag)) = self.def(src) {
                src = after_raw(src, &raw);
                match tokens.last_mut() {
                    Some(last) if matches!(last.kind, Kind::Paragraph | Kind::Text) => {
                        last.continue_with(&raw, &raw);
                    }
                    // A definition is not a token: its raw text never reaches the output.
                    _ => {
                        if self.depth == 1 {
                            let start = self.top_len - src.len() - raw.len();
                            self.skipped.push(start..start + raw.len());
                        }
                        self.links.insert(tag);
                    }
                }
                continue;
            }
            if let Some(token) = self.lheading(src, &mut no_underline_past) {
                src = after_raw(src, &token.raw);
                tokens.push(token);
                continue;
            }
            if self.top {
                if let Some(token) = self.paragraph(src) {
                    let advance = utf16_len(&token.raw);
                    match tokens.last_mut() {
                        Some(last) if last_paragraph_clipped && last.kind == Kind::Paragraph => {
                            last.continue_with(&token.raw, &token.text);
                        }
                        _ => tokens.push(token),
                    }
                    // No extensions, so the paragraph source is never cut.
                    last_paragraph_clipped = false;
                    src = substring_from(src, advance);
                    continue;
                }
            }
            if let Some(token) = self.text(src) {
                src = after_raw(src, &token.raw);
                match tokens.last_mut() {
                    Some(last) if last.kind == Kind::Text => {
                        last.continue_with(&token.raw, &token.text);
                    }
                    _ => tokens.push(token),
                }
                continue;
            }
            let byte = src.encode_utf16().next().map_or(0, u32::from);
            return Err(LexError::Stuck { byte });
        }
        self.top = true;
        Ok(())
    }

    fn space(&self, src: &str) -> Option<Token> {
        if !may(matches!(src.bytes().find(|&b| b != b' ' && b != b'\t'), None | Some(b'\n'))) {
            return None;
        }
        let c = caps(&NEWLINE, src)?;
        let raw = group_or_empty(&c, 0);
        (!raw.is_empty()).then(|| Token::new(Kind::Space, raw))
    }

    fn code(&self, src: &str) -> Option<Token> {
        if !may(src.starts_with("    ") || after_indent(src) == Some(b'\t')) {
            return None;
        }
        let c = caps(&BLOCK_CODE, src)?;
        let raw = group_or_empty(&c, 0);
        // marked: `.replace(/^(?: {1,4}| {0,3}\t)/gm, '')`.
        let text = strip_line_prefixes(raw, code_indent_len);
        Some(Token::with_text(Kind::Code, raw, rtrim_char(&text, '\n')))
    }

    fn fences(&self, src: &str) -> Option<Token> {
        if !may(matches!(after_indent(src), Some(b'`' | b'~'))) {
            return None;
        }
        let c = caps(&FENCES, src)?;
        // The fenced text is never searched or merged, so marked's indent compensation of
        // `text` is not needed here.
        Some(Token::with_text(Kind::Code, group_or_empty(&c, 0), group_or_empty(&c, 3)))
    }

    fn heading(&self, src: &str) -> Option<Token> {
        if !may(after_indent(src) == Some(b'#')) {
            return None;
        }
        let c = caps(&HEADING, src)?;
        let mut text = js_trim(group_or_empty(&c, 2)).to_string();
        if text.ends_with('#') {
            let trimmed = rtrim_char(&text, '#');
            if trimmed.is_empty() || trimmed.ends_with(' ') {
                text = js_trim(trimmed).to_string();
            }
        }
        Some(Token::inline(Kind::Heading, group_or_empty(&c, 0), text))
    }

    fn hr(&self, src: &str) -> Option<Token> {
        if !may(matches!(after_indent(src), Some(b'-' | b'_' | b'*'))) {
            return None;
        }
        let c = caps(&HR, src)?;
        Some(Token::new(Kind::Hr, rtrim_char(group_or_empty(&c, 0), '\n')))
    }

    fn blockquote(&mut self, src: &str) -> Result<Option<Token>, LexError> {
        if !may(after_indent(src) == Some(b'>')) {
            return Ok(None);
        }
        let Some(len) = blockquote_len(src, LazyLock::force(self.quote_interrupt)) else { return Ok(None) };
        let mut lines: Vec<String> = rtrim_char(&src[..len], '\n').split('\n').map(str::to_string).collect();
        let mut raw = String::new();
        let mut text = String::new();
        let mut tokens: Vec<Token> = Vec::new();
        // Lines before `start` are taken. Taken by moving a start rather than draining them off
        // the front, which moved every line left for each step: `> a` and a lazy line a
        // million times over was a trillion moves.
        let mut start = 0;
        while start < lines.len() {
            let mut in_blockquote = false;
            let mut i = start;
            while i < lines.len() {
                // marked's `/^ {0,3}>/`.
                if quote_marker_len(&lines[i]) > 0 {
                    in_blockquote = true;
                } else if in_blockquote {
                    break;
                }
                i += 1;
            }
            let current_raw = lines[start..i].join("\n");
            start = i;
            let step = if may_hold_setext_underline(&current_raw) {
                std::borrow::Cow::Owned(replace_all(&BLOCKQUOTE_SETEXT, &current_raw, "\n    ${1}"))
            } else {
                std::borrow::Cow::Borrowed(current_raw.as_str())
            };
            // marked: `.replace(/^ {0,3}>[ \t]?/gm, '')`.
            let current_text = strip_line_prefixes(&step, quote_marker_len);
            for (whole, part) in [(&mut raw, current_raw.as_str()), (&mut text, current_text.as_str())] {
                if !whole.is_empty() {
                    whole.push('\n');
                }
                whole.push_str(part);
            }
            let top = self.top;
            self.top = true;
            self.block_tokens(&current_text, &mut tokens, true)?;
            self.top = top;
            if start >= lines.len() {
                break;
            }
            let Some(last) = tokens.last() else { continue };
            match last.kind {
                Kind::Code => break,
                Kind::Blockquote => {
                    // Only its texts: cloning the token would copy its whole subtree, at every
                    // level of a deep quote.
                    let (old_raw, old_text) = (last.raw.clone(), last.text.clone());
                    let new_text = format!("{old_raw}\n{}", lines[start..].join("\n"));
                    let Some(new_token) = self.blockquote(&new_text)? else { break };
                    raw = format!("{}{}", substring_to(&raw, utf16_len(&raw).saturating_sub(utf16_len(&old_raw))), new_token.raw);
                    text = format!("{}{}", substring_to(&text, utf16_len(&text).saturating_sub(utf16_len(&old_text))), new_token.text);
                    let n = tokens.len();
                    tokens[n - 1] = new_token;
                    break;
                }
                Kind::List => {
                    let old_raw = last.raw.clone();
                    let new_text = format!("{old_raw}\n{}", lines[start..].join("\n"));
                    let Some(new_token) = self.list(&new_text)? else { break };
                    raw = format!("{}{}", substring_to(&raw, utf16_len(&raw).saturating_sub(utf16_len(&old_raw))), new_token.raw);
                    // marked subtracts the old token's raw (not text) length here.
                    text = format!("{}{}", substring_to(&text, utf16_len(&text).saturating_sub(utf16_len(&old_raw))), new_token.raw);
                    lines = after_raw(&new_text, &new_token.raw).split('\n').map(str::to_string).collect();
                    start = 0;
                    let n = tokens.len();
                    tokens[n - 1] = new_token;
                    continue;
                }
                _ => {}
            }
        }
        Ok(Some(Token { kind: Kind::Blockquote, raw, text, tokens, items: Vec::new(), inline_pending: false }))
    }

    fn list(&mut self, src: &str) -> Result<Option<Token>, LexError> {
        if !may(matches!(after_indent(src), Some(b'*' | b'+' | b'-' | b'0'..=b'9'))) {
            return Ok(None);
        }
        let Some(c) = caps(&LIST, src) else { return Ok(None) };
        let bull = js_trim(group_or_empty(&c, 1));
        let item_regex: &Regex = if bull.len() > 1 {
            if bull.ends_with('.') { &LIST_ITEM_DOT } else { &LIST_ITEM_PAREN }
        } else {
            match bull {
                "*" => &LIST_ITEM_STAR,
                "+" => &LIST_ITEM_PLUS,
                _ => &LIST_ITEM_DASH,
            }
        };
        let mut src: &str = src;
        let mut items: Vec<(String, String)> = Vec::new();
        let mut list_raw = String::new();
        while !src.is_empty() {
            let Some(cap) = caps(item_regex, src) else { break };
            if test(&HR, src) {
                break;
            }
            let cap0 = group_or_empty(&cap, 0).to_string();
            let cap1 = group_or_empty(&cap, 1).to_string();
            let cap2 = group_or_empty(&cap, 2).to_string();
            let mut raw = cap0.clone();
            src = after_raw(src, &raw);
            let mut line = expand_leading_tabs(first_line(&cap2));
            let mut next_line = first_line(src).to_string();
            let mut blank_line = js_trim(&line).is_empty();
            let mut item_contents = String::new();
            let indent: usize;
            if blank_line {
                indent = utf16_len(&cap1) + 1;
            } else {
                let mut ind = search_non_space(&cap2);
                ind = if ind > 4 { 1 } else { ind };
                let ind = ind.max(0) as usize;
                item_contents = substring_from(&line, ind).to_string();
                indent = ind + utf16_len(&cap1);
            }
            let mut end_early = false;
            if blank_line && test(&BLANK_LINE, &next_line) {
                raw.push_str(&next_line);
                raw.push('\n');
                src = substring_from(src, utf16_len(&next_line) + 1);
                end_early = true;
            }
            if !end_early {
                let rules = &INDENT_RULES[indent.saturating_sub(1).min(3)];
                while !src.is_empty() {
                    let raw_line = first_line(src).to_string();
                    next_line = raw_line.clone();
                    let next_line_without_tabs = next_line.replace('\t', "    ");
                    if rules.fences_begin(&next_line)
                        || rules.heading_begin(&next_line)
                        || rules.html_begin(&next_line)
                        || rules.next_bullet(&next_line)
                        || rules.hr(&next_line)
                    {
                        break;
                    }
                    if search_non_space(&next_line_without_tabs) >= indent as isize || js_trim(&next_line).is_empty() {
                        item_contents.push('\n');
                        item_contents.push_str(substring_from(&next_line_without_tabs, indent));
                    } else {
                        if blank_line {
                            break;
                        }
                        if search_non_space(&line.replace('\t', "    ")) >= 4 {
                            break;
                        }
                        if rules.fences_begin(&line) || rules.heading_begin(&line) || rules.hr(&line) {
                            break;
                        }
                        item_contents.push('\n');
                        item_contents.push_str(&next_line);
                    }
                    if !blank_line && js_trim(&next_line).is_empty() {
                        blank_line = true;
                    }
                    raw.push_str(&raw_line);
                    raw.push('\n');
                    src = substring_from(src, utf16_len(&raw_line) + 1);
                    line = substring_from(&next_line_without_tabs, indent).to_string();
                }
            }
            // marked's `loose` bookkeeping only changes rendering, not tokens: not ported.
            list_raw.push_str(&raw);
            items.push((raw, item_contents));
        }
        let Some(last) = items.last_mut() else { return Ok(None) };
        last.0 = js_trim_end(&last.0).to_string();
        last.1 = js_trim_end(&last.1).to_string();
        let list_raw = js_trim_end(&list_raw).to_string();
        let mut item_tokens = Vec::with_capacity(items.len());
        for (raw, text) in items {
            self.top = false;
            let mut tokens = Vec::new();
            self.block_tokens(&text, &mut tokens, false)?;
            item_tokens.push(Token { kind: Kind::ListItem, raw, text, tokens, items: Vec::new(), inline_pending: false });
        }
        Ok(Some(Token { kind: Kind::List, raw: list_raw, text: String::new(), tokens: Vec::new(), items: item_tokens, inline_pending: false }))
    }

    fn html(&self, src: &str) -> Option<Token> {
        if !may(after_indent(src) == Some(b'<')) {
            return None;
        }
        let c = caps(&HTML, src)?;
        Some(Token::new(Kind::Html, group_or_empty(&c, 0)))
    }

    /// A link reference definition: its raw text and its normalized label.
    fn def(&self, src: &str) -> Option<(String, String)> {
        if !may(after_indent(src) == Some(b'[')) {
            return None;
        }
        let c = caps(&DEF, src)?;
        let tag = replace_all(&MULTIPLE_SPACE, &group_or_empty(&c, 1).to_lowercase(), " ");
        Some((group_or_empty(&c, 0).to_string(), tag))
    }

    /// `no_underline_past`: what [`underline_ahead`] last found for an earlier view of `src`.
    fn lheading(&self, src: &str, no_underline_past: &mut Option<usize>) -> Option<Token> {
        let known_none = no_underline_past.is_some_and(|left| src.len() > left);
        let ahead = !known_none
            && underline_ahead(src).map_err(|left| *no_underline_past = Some(left)).is_ok();
        if !may(ahead) {
            return None;
        }
        let c = caps(&LHEADING, src)?;
        Some(Token::inline(Kind::Heading, group_or_empty(&c, 0), group_or_empty(&c, 1)))
    }

    fn paragraph(&self, src: &str) -> Option<Token> {
        let c = caps(&PARAGRAPH, src)?;
        let cap1 = group_or_empty(&c, 1);
        let text = cap1.strip_suffix('\n').unwrap_or(cap1);
        Some(Token::inline(Kind::Paragraph, group_or_empty(&c, 0), text))
    }

    fn text(&self, src: &str) -> Option<Token> {
        let c = caps(&BLOCK_TEXT, src)?;
        let raw = group_or_empty(&c, 0);
        Some(Token::inline(Kind::Text, raw, raw))
    }

    // ---- inline ---------------------------------------------------------------------------

    fn inline_tokens(&mut self, src: &str) -> Result<Vec<Token>, LexError> {
        if self.depth >= MAX_INLINE_NESTING {
            return Err(LexError::TooDeep { limit: MAX_INLINE_NESTING });
        }
        self.depth += 1;
        let r = grow(|| self.inline_tokens_inner(src));
        self.depth -= 1;
        r
    }

    fn inline_tokens_inner(&mut self, src: &str) -> Result<Vec<Token>, LexError> {
        let masked = self.mask(src);
        let mut cursor = MaskCursor::new(src, &masked);
        let mut chains = EmChains { masked: &masked, ast: None, und: None };
        let mut link_runs = LinkRuns::new(src);
        let mut backtick_runs: Option<BacktickRuns> = None;
        let mut delim_run = DelimRun::default();
        let mut after_run = MaskCursor::new(src, &masked);
        // Where the last closers are: an HTML comment's `-->`, a link's `)`, any tag's `>`, a
        // processing instruction's `?>`, a CDATA section's `]]>`.
        let (last_comment_close, last_paren) = (src.rfind("-->"), src.rfind(')'));
        let (last_gt, last_pi_close, last_cdata_close) = (src.rfind('>'), src.rfind("?>"), src.rfind("]]>"));
        let mut tokens: Vec<Token> = Vec::new();
        let mut rest: &str = src;
        let mut keep_prev_char = false;
        let mut prev_char = String::new();
        while !rest.is_empty() {
            if !keep_prev_char {
                prev_char.clear();
            }
            keep_prev_char = false;
            // Each inline rule below starts with a fixed character; as for the block rules
            // ([`after_indent`]), its regex runs only where the text starts with it.
            let first = rest.as_bytes()[0];
            if let Some(c) = if may(first == b'\\') { caps(&ESCAPE, rest) } else { None } {
                let raw = group_or_empty(&c, 0);
                tokens.push(Token::with_text(Kind::Escape, raw, group_or_empty(&c, 1)));
                rest = &rest[raw.len()..];
                continue;
            }
            // Two regexes that can only match with a closer somewhere ahead would scan to the
            // end for it at every opener of a hostile paragraph (`<!--<!--…`, `[a]([a](…`),
            // quadratic in its length: where the closer is nowhere ahead they are not run.
            let at = src.len() - rest.len();
            let comment_cannot_close = rest.starts_with("<!--")
                && !rest[4..].starts_with('>')
                && !rest[4..].starts_with("->")
                && last_comment_close.is_none_or(|e| e < at + 4);
            // The same for the other openers (`<?`×a million, no `?>`): every form of tag ends
            // with `>`, a processing instruction with `?>`, a CDATA section with `]]>`.
            let tag_cannot_close = last_gt.is_none_or(|e| e < at)
                || (rest.starts_with("<?") && last_pi_close.is_none_or(|e| e < at + 2))
                || (rest.starts_with("<![") && last_cdata_close.is_none_or(|e| e < at + 9));
            if let Some(c) = if !may(first == b'<' && !comment_cannot_close && !tag_cannot_close) { None } else { caps(&TAG, rest) } {
                let raw = group_or_empty(&c, 0);
                tokens.push(Token::with_text(Kind::Html, raw, raw));
                rest = &rest[raw.len()..];
                continue;
            }
            let link_cannot_close = last_paren.is_none_or(|p| p < at) || !may(first == b'[' || rest.starts_with("!["));
            if let Some(token) = if link_cannot_close { None } else { self.link(rest, &mut link_runs)? } {
                rest = after_raw(rest, &token.raw);
                tokens.push(token);
                continue;
            }
            if let Some(token) = if may(first == b'[' || rest.starts_with("![")) { self.reflink(rest)? } else { None } {
                rest = after_raw(rest, &token.raw);
                match tokens.last_mut() {
                    Some(last) if token.kind == Kind::Text && last.kind == Kind::Text => {
                        last.raw.push_str(&token.raw);
                        last.text.push_str(&token.text);
                    }
                    _ => tokens.push(token),
                }
                continue;
            }
            if let Some(token) = if may(first == b'*' || first == b'_') {
                // (With the rule checks off, as a test runs them, the rule is tried anywhere.)
                let run = if first == b'*' || first == b'_' { delim_run.at(at, rest) } else { 0 };
                // marked's masked text after the run: counted from the run's end by a cursor of
                // its own, whose position stays put through the run, instead of counting the
                // run off the masked tail at each of its characters. Where the mask is shorter
                // than the text (a `\\` before a character outside the BMP) the tail near the start
                // is clamped, and only the old count gives marked's answer.
                let masked_tail = cursor.tail_for(rest);
                let masked = if cursor.totals.0 == cursor.totals.1 { after_run.tail_for(&rest[run..]) } else { substring_from(masked_tail, run) };
                self.em_strong(rest, run, masked, &prev_char, &mut chains)?
            } else {
                None
            } {
                rest = after_raw(rest, &token.raw);
                tokens.push(token);
                continue;
            }
            // A code span's closer is the next run of exactly as many backticks; where there is
            // none ahead, the regex would search to the end for it, at every opener of a
            // paragraph of unclosed runs.
            let code_cannot_close = first == b'`' && !backtick_runs.get_or_insert_with(|| BacktickRuns::of(src)).closes(at);
            if let Some(c) = if may(first == b'`' && !code_cannot_close) { caps(&INLINE_CODE, rest) } else { None } {
                let raw = group_or_empty(&c, 0);
                tokens.push(Token::with_text(Kind::Codespan, raw, group_or_empty(&c, 2)));
                rest = &rest[raw.len()..];
                continue;
            }
            if let Some(c) = if may(first == b' ' || first == b'\\') { caps(&BR, rest) } else { None } {
                let raw = group_or_empty(&c, 0);
                tokens.push(Token::new(Kind::Br, raw));
                rest = &rest[raw.len()..];
                continue;
            }
            if let Some(c) = if may(first == b'<') { caps(&AUTOLINK, rest) } else { None } {
                let raw = group_or_empty(&c, 0);
                let text = group_or_empty(&c, 1);
                let mut link = Token::with_text(Kind::Link, raw, text);
                link.tokens.push(Token::with_text(Kind::Text, text, text));
                tokens.push(link);
                rest = &rest[raw.len()..];
                continue;
            }
            if let Some(c) = caps(&INLINE_TEXT, rest) {
                let raw = group_or_empty(&c, 0);
                if !raw.ends_with('_') {
                    prev_char = raw.chars().last().map(String::from).unwrap_or_default();
                }
                keep_prev_char = true;
                match tokens.last_mut() {
                    Some(last) if last.kind == Kind::Text => {
                        last.raw.push_str(raw);
                        last.text.push_str(raw);
                    }
                    _ => tokens.push(Token::with_text(Kind::Text, raw, raw)),
                }
                rest = &rest[raw.len()..];
                continue;
            }
            let byte = rest.encode_utf16().next().map_or(0, u32::from);
            return Err(LexError::Stuck { byte });
        }
        Ok(tokens)
    }

    /// marked's `maskedSrc`: reference links, escaped punctuation and skippable spans
    /// (links, code spans, tags) are overwritten so emphasis delimiters inside them are not
    /// seen. Replacements keep the UTF-16 length (except marked's own astral-escape quirk).
    fn mask(&self, src: &str) -> String {
        let mut masked = src.to_string();
        if !self.links.is_empty() && may(masked.contains('[')) {
            masked = global_replace(&REFLINK_SEARCH, &masked, |m: &str| {
                // `match[0].slice(match[0].lastIndexOf("[") + 1, -1)`; the match ends in `]`.
                let from = m.rfind('[').map_or(0, |i| i + 1);
                let to = m.len().saturating_sub(1);
                let label = if from < to { &m[from..to] } else { "" };
                self.links.contains(label).then(|| bracket_mask(m))
            });
        }
        // Each of these matches only at a `\\`, or a `[`, `` ` `` or `<`.
        if may(masked.contains('\\')) {
            masked = global_replace(&ANY_PUNCTUATION, &masked, |_| Some("++".to_string()));
        }
        if !may(masked.contains(['[', '`', '<'])) {
            return masked;
        }
        global_replace(&BLOCK_SKIP, &masked, |m| Some(bracket_mask(m)))
    }

    fn link(&mut self, src: &str, runs: &mut LinkRuns) -> Result<Option<Token>, LexError> {
        let Some((mut cap0, cap1, cap2)) = runs.link(src) else { return Ok(None) };
        let trimmed_url = js_trim(cap2);
        if trimmed_url.starts_with('<') {
            if !trimmed_url.ends_with('>') {
                return Ok(None);
            }
            // The `>` and the backslashes before it: an even count escapes the `>`.
            let inner = &trimmed_url[..trimmed_url.len() - 1];
            if (1 + inner.len() - rtrim_char(inner, '\\').len()) & 1 == 0 {
                return Ok(None);
            }
        } else {
            match runs.closing_paren(src, cap2) {
                ClosingBracket::Unbalanced => return Ok(None),
                ClosingBracket::At(last_paren) => {
                    let start = if cap0.starts_with('!') { 5 } else { 4 };
                    let link_len = start + utf16_len(cap1) + last_paren;
                    cap0 = js_trim(substring_to(cap0, link_len));
                }
                ClosingBracket::None => {}
            }
        }
        self.output_link(cap0, cap1).map(Some)
    }

    fn output_link(&mut self, raw: &str, label: &str) -> Result<Token, LexError> {
        let text = replace_all(&OUTPUT_LINK_REPLACE, label, "${1}");
        let kind = if raw.starts_with('!') { Kind::Image } else { Kind::Link };
        let tokens = self.inline_tokens(&text)?;
        Ok(Token { kind, raw: raw.to_string(), text, tokens, items: Vec::new(), inline_pending: false })
    }

    fn reflink(&mut self, src: &str) -> Result<Option<Token>, LexError> {
        let Some(c) = caps(&REFLINK, src).or_else(|| caps(&NOLINK, src)) else { return Ok(None) };
        let cap0 = group_or_empty(&c, 0).to_string();
        let label = group_or_empty(&c, 1).to_string();
        let link_string = match group(&c, 2) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => label.clone(),
        };
        let key = replace_all(&MULTIPLE_SPACE, &link_string, " ").to_lowercase();
        if !self.links.contains(&key) {
            let first: String = cap0.chars().next().map(String::from).unwrap_or_default();
            return Ok(Some(Token::with_text(Kind::Text, first.clone(), first)));
        }
        self.output_link(&cap0, &label).map(Some)
    }

    /// `masked_tail`: the masked text's last `src.length` UTF-16 units (see [`MaskCursor`]).
    /// `run`: the length of the run of `*` or `_` `src` starts with; `masked`: the masked text
    /// after it (marked's `maskedSrc.slice(-1 * src.length + lLength)`).
    fn em_strong(&mut self, src: &str, run: usize, masked: &str, prev_char: &str, chains: &mut EmChains) -> Result<Option<Token>, LexError> {
        let Some((m, m0)) = em_opener(src, run) else { return Ok(None) };
        if m.get(3).is_some() && test(&UNICODE_ALNUM, prev_char) {
            return Ok(None);
        }
        let next_char = group(&m, 1).filter(|s| !s.is_empty()).or_else(|| group(&m, 2)).unwrap_or("");
        if !(next_char.is_empty() || prev_char.is_empty() || test(&PUNCTUATION, prev_char)) {
            return Ok(None);
        }
        // The match is the run and one character after it (counting its characters walked the
        // run again).
        let l_length = run;
        let (end_reg, chain): (&'static Regex, _) =
            if m0.starts_with('*') { (&EM_STRONG_RDELIM_AST, &mut chains.ast) } else { (&EM_STRONG_RDELIM_UND, &mut chains.und) };
        let chain = chain.get_or_insert_with(|| DelimChain::new(chains.masked, end_reg));
        if let Some((start, r_length)) = chain.closer(masked, l_length) {
            let match_index = utf16_len(&masked[..start]);
            let last_char_length = masked[start..].chars().next().map_or(0, char::len_utf16);
            let raw_len = (l_length + match_index + last_char_length) as isize + r_length;
            let raw = substring_to(src, raw_len.max(0) as usize).to_string();
            let (kind, text) = if (l_length as isize).min(r_length) % 2 != 0 {
                (Kind::Em, slice_units(&raw, 1, 1))
            } else {
                (Kind::Strong, slice_units(&raw, 2, 2))
            };
            let tokens = self.inline_tokens(&text)?;
            return Ok(Some(Token { kind, raw, text, tokens, items: Vec::new(), inline_pending: false }));
        }
        Ok(None)
    }
}

/// The masked text's last `rest.length` UTF-16 units for each `rest` (a suffix of the text the
/// mask was made from) as the inline lexer walks forward: marked slices them off the end of the
/// masked text for every emphasis delimiter, which counted over the whole text each time made
/// a paragraph of thousands of `*a` quadratic. Both positions only move forward — `rest`
/// shrinks, and the masked text's start of the tail is its length less `rest`'s, in units — so
/// a cursor through each text costs the length walked. (The two lengths differ by one unit for
/// each `\\` before a character outside the BMP, which the mask shortens.)
struct MaskCursor<'a> {
    src: &'a str,
    masked: &'a str,
    /// UTF-16 lengths of `src` and `masked`.
    totals: (usize, usize),
    /// Byte positions reached in `src` and `masked`, and their UTF-16 offsets.
    at: (usize, usize),
    units: (usize, usize),
}

impl<'a> MaskCursor<'a> {
    fn new(src: &'a str, masked: &'a str) -> MaskCursor<'a> {
        MaskCursor { src, masked, totals: (utf16_len(src), utf16_len(masked)), at: (0, 0), units: (0, 0) }
    }

    fn tail_for(&mut self, rest: &str) -> &'a str {
        let to = self.src.len() - rest.len().min(self.src.len());
        if to < self.at.0 {
            // Asked about an earlier point (the lexer never does): count from the end.
            return substring_from(self.masked, self.totals.1.saturating_sub(utf16_len(rest)));
        }
        self.units.0 += utf16_len(&self.src[self.at.0..to]);
        self.at.0 = to;
        let target = self.totals.1.saturating_sub(self.totals.0 - self.units.0);
        // `units.1` is at most every earlier target, which is at most this one; the scan goes
        // on from a character boundary exactly as `substring_from` would from the start.
        let from = self.at.1;
        self.at.1 += byte_offset_of_utf16(&self.masked[from..], target - self.units.1);
        self.units.1 += utf16_len(&self.masked[from..self.at.1]);
        &self.masked[self.at.1..]
    }
}

/// `raw.slice(a, -b)` in UTF-16 units.
fn slice_units(s: &str, from_start: usize, from_end: usize) -> String {
    let total = utf16_len(s);
    if total < from_start + from_end {
        return String::new();
    }
    let a = byte_offset_of_utf16(s, from_start);
    let b = byte_offset_of_utf16(s, total - from_end);
    s[a..b.max(a)].to_string()
}

fn expand_leading_tabs(line: &str) -> String {
    let tabs = line.chars().take_while(|c| *c == '\t').count();
    format!("{}{}", " ".repeat(3 * tabs), &line[tabs..])
}

/// `"[" + "a".repeat(len - 2) + "]"` with `len` in UTF-16 units.
fn bracket_mask(m: &str) -> String {
    format!("[{}]", "a".repeat(utf16_len(m).saturating_sub(2)))
}

/// marked's `while ((match = re.exec(s)) != null) s = s.slice(0, i) + repl + s.slice(re.lastIndex)`
/// loop: the search resumes at the old match end, counted in UTF-16 units on the new string.
///
/// Built in one pass while no replacement is longer than its match in UTF-16 units (all of
/// marked's masks keep the length, bar a `\\` before a character outside the BMP, which
/// shortens it): then the new string from the resume point on is the input's own text, so
/// searching the input there is searching the new string (none of these patterns looks
/// behind), and a hostile paragraph of thousands of matches costs linear time instead of a
/// copy of the whole string per match. A longer replacement continues in marked's own way.
fn global_replace(re: &Regex, input: &str, mut repl: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let (mut copied, mut pos) = (0usize, 0usize);
    while pos <= input.len() {
        let Ok(Some(m)) = re.find_from_pos(input, pos) else { break };
        if m.start() == m.end() {
            let at = out.len() + (m.start() - copied);
            out.push_str(&input[copied..]);
            return global_replace_from(re, out, at, repl);
        }
        if let Some(r) = repl(m.as_str()) {
            let (old_units, new_units) = (utf16_len(m.as_str()), utf16_len(&r));
            if new_units > old_units {
                // The search resumes at the old end counted on the new string, which lies
                // inside the replacement: do it on that string.
                let resume = utf16_len(&input[copied..m.end()]) + utf16_len(&out);
                out.push_str(&input[copied..m.start()]);
                out.push_str(&r);
                out.push_str(&input[m.end()..]);
                let at = byte_offset_of_utf16(&out, resume);
                return global_replace_from(re, out, at, repl);
            }
            out.push_str(&input[copied..m.start()]);
            out.push_str(&r);
            // A shorter replacement (`\` before a character outside the BMP, 3 units, masked
            // as `++`): the old end counted on the new string lies that many units past the
            // replacement, in text the new string shares with the input. Those units are
            // skipped unsearched, as in marked, and the search goes on in the input.
            let skip = byte_offset_of_utf16(&input[m.end()..], old_units - new_units);
            out.push_str(&input[m.end()..m.end() + skip]);
            copied = m.end() + skip;
            pos = copied;
            continue;
        }
        pos = m.end();
    }
    out.push_str(&input[copied..]);
    out
}

/// marked's loop itself, on `s` from byte `pos`: a copy of the string per replacement.
fn global_replace_from(re: &Regex, mut s: String, mut pos: usize, mut repl: impl FnMut(&str) -> Option<String>) -> String {
    while pos <= s.len() {
        let Ok(Some(m)) = re.find_from_pos(&s, pos) else { break };
        let (start, end) = (m.start(), m.end());
        let end_units = utf16_len(&s[..end]);
        if let Some(r) = repl(m.as_str()) {
            s = format!("{}{}{}", &s[..start], r, &s[end..]);
        }
        let mut next = byte_offset_of_utf16(&s, end_units);
        if next <= pos || next <= start {
            // Never stall (marked's rules cannot match empty, but a guard costs nothing).
            next = start + s[start..].chars().next().map_or(1, char::len_utf8);
        }
        pos = next;
    }
    s
}

/// `str.replace(re, template)` for a global regex, without fancy-regex's panic on a runtime
/// error (such an error leaves the rest of the string unchanged).
/// `text.replace(/^P/gm, '')` for a pattern `P` that never crosses a line, `prefix_len` giving
/// the length of its match at the start of a line (0 for none). JavaScript's multiline `^`
/// is at the start and after every `\n`, `\r`, U+2028 and U+2029 (the regex crate's only
/// after `\n`), and one pass over the lines stays linear where the regex tried every `>` of
/// a deep quote as a place to start.
fn strip_line_prefixes(text: &str, prefix_len: fn(&str) -> usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        rest = &rest[prefix_len(rest)..];
        match line_terminator(rest) {
            Some(i) => {
                let end = i + if rest.as_bytes()[i] == 0xE2 { 3 } else { 1 };
                out.push_str(&rest[..end]);
                rest = &rest[end..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// The maximal runs of backticks of an inline text, by length: where a code span opened at
/// some position could close ([`INLINE_CODE`]: the next run of exactly the opener's length,
/// with at least one character between).
struct BacktickRuns {
    /// Every run as (start, end), in order.
    runs: Vec<(usize, usize)>,
    /// Run length → the starts of the runs that long, in order.
    starts: std::collections::HashMap<usize, Vec<usize>>,
}

impl BacktickRuns {
    fn of(src: &str) -> BacktickRuns {
        let bytes = src.as_bytes();
        let mut out = BacktickRuns { runs: Vec::new(), starts: std::collections::HashMap::new() };
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'`' {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && bytes[i] == b'`' {
                i += 1;
            }
            out.runs.push((start, i));
            out.starts.entry(i - start).or_default().push(start);
        }
        out
    }

    /// Whether a code span opened at `at` (inside or at the start of a run: the opener is the
    /// rest of that run) has a closer ahead.
    fn closes(&self, at: usize) -> bool {
        let i = self.runs.partition_point(|&(start, _)| start <= at);
        let Some(&(start, end)) = i.checked_sub(1).and_then(|i| self.runs.get(i)) else { return false };
        if at < start || at >= end {
            return false;
        }
        self.starts.get(&(end - at)).is_some_and(|runs| runs.partition_point(|&s| s <= end) < runs.len())
    }
}

/// Whether some line after the first starts (after up to three spaces) with `=` or `-`, as
/// [`BLOCKQUOTE_SETEXT`] needs: most quotes have none, and the regex's search over a deep quote
/// at every level was a large part of its time.
fn may_hold_setext_underline(text: &str) -> bool {
    text.match_indices('\n').any(|(i, _)| {
        let after = &text.as_bytes()[i + 1..];
        let spaces = after.iter().take(3).take_while(|&&c| c == b' ').count();
        matches!(after.get(spaces), Some(b'=' | b'-'))
    })
}

/// Where JavaScript's first line terminator in `s` is: `\n`, `\r`, U+2028 or U+2029 (both
/// `E2 80 A8/A9` in UTF-8).
fn line_terminator(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = memchr::memchr3(b'\n', b'\r', 0xE2, &b[from..]) {
        let i = from + i;
        if b[i] != 0xE2 || (b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xA8 | 0xA9))) {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// Where ` {0,3}>` at the start of `s` ends, if it is there.
fn after_quote_marker(s: &str) -> Option<usize> {
    (after_indent(s) == Some(b'>')).then(|| s.find('>').map_or(0, |i| i + 1))
}

/// ` {0,3}>[ \t]?` at the start of `line`.
fn quote_marker_len(line: &str) -> usize {
    after_quote_marker(line).map_or(0, |n| n + usize::from(matches!(line.as_bytes().get(n), Some(b' ' | b'\t'))))
}

/// `(?: {1,4}| {0,3}\t)` at the start of `line`: the first branch wins whenever there is a
/// space, so a tab counts only at the very start.
fn code_indent_len(line: &str) -> usize {
    let b = line.as_bytes();
    match b.iter().take(4).take_while(|&&c| c == b' ').count() {
        0 => usize::from(b.first() == Some(&b'\t')),
        n => n,
    }
}

fn replace_all(re: &Regex, text: &str, template: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for c in re.captures_iter(text) {
        let Ok(c) = c else { break };
        let Some(m) = c.get(0) else { continue };
        out.push_str(&text[last..m.start()]);
        c.expand(template, &mut out);
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

enum ClosingBracket {
    None,
    Unbalanced,
    At(usize),
}

/// marked's `findClosingBracket(str, "()")`, index in UTF-16 units.
fn find_closing_bracket(s: &str, open: char, close: char) -> ClosingBracket {
    if !s.contains(close) {
        return ClosingBracket::None;
    }
    let mut level: i64 = 0;
    let mut units = 0usize;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            units += 1;
            if let Some(n) = chars.next() {
                units += n.len_utf16();
            }
            continue;
        } else if c == open {
            level += 1;
        } else if c == close {
            level -= 1;
            if level < 0 {
                return ClosingBracket::At(units);
            }
        }
        units += c.len_utf16();
    }
    if level > 0 {
        ClosingBracket::Unbalanced
    } else {
        ClosingBracket::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The emphasis opener read from the end of its run answers as marked's rule over the whole
    /// text: same groups, same match (the rule walked a run of `*` at each of its positions, so a
    /// line of them took time in the square of its length).
    #[test]
    fn emphasis_opener_from_the_runs_end_matches_the_rule() {
        let slices = |c: &Captures<'_, str>| (0..4).map(|i| c.get(i).map(|g| (g.start(), g.end()))).collect::<Vec<_>>();
        for delim in ["*", "_", "**_", "_*"] {
            for n in [1, 2, 3, 7, 40] {
                for after in ["", " ", "\n", "a", "*", "_", "!", ".", "\u{a0}", "é", "😀", "a*", "*a", "\t"] {
                    let src = format!("{}{after}", delim.repeat(n));
                    let full = caps(&EM_STRONG_LDELIM, &src);
                    let run = if matches!(src.as_bytes()[0], b'*' | b'_') { src.bytes().take_while(|&b| b == src.as_bytes()[0]).count() } else { 0 };
                    let fast = em_opener(&src, run);
                    assert_eq!(full.is_some(), fast.is_some(), "{src:?}");
                    if let (Some(full), Some((m, whole))) = (full, fast) {
                        assert_eq!(&src[..full.get(0).unwrap().end()], whole, "{src:?}");
                        let base = src.len() - m.get(0).map_or(0, |g| g.as_str().len()) - (src.len() - whole.len());
                        let shifted: Vec<_> = slices(&m).into_iter().map(|g| g.map(|(a, b)| (a + base, b + base))).collect();
                        assert_eq!(slices(&full)[1..], shifted[1..], "{src:?}");
                    }
                }
            }
        }
        // A line of 20,000 `*` lexes as one paragraph.
        let tokens = lex(&format!("x {}\n", "*".repeat(20_000))).unwrap();
        assert_eq!(tokens.len(), 1);
    }

    /// The run length [`DelimRun`] keeps between steps is the one counted afresh at every
    /// position the lexer stands on, through runs of either delimiter, runs side by side and
    /// runs it jumps into.
    #[test]
    fn a_delimiter_runs_end_found_once_answers_every_position_in_it() {
        let text = "a**__*_b***** c_____*";
        for step in [1, 2, 3] {
            let mut run = DelimRun::default();
            for at in (0..text.len()).step_by(step) {
                let rest = &text[at..];
                let first = rest.as_bytes()[0];
                if first == b'*' || first == b'_' {
                    assert_eq!(run.at(at, rest), rest.bytes().take_while(|&b| b == first).count(), "at {at}, step {step}");
                }
            }
        }
    }

    /// The checks before each rule ([`after_indent`], [`may`]) only skip rules that cannot
    /// match: lexing with them and without them gives the same tokens.
    #[test]
    fn rule_checks_change_no_token() {
        use proptest::prelude::*;
        const PIECES: &[&str] = &[
            "# h", "  ## h #", "####### x", "text", "more text", "", "", "  ", "\t", "    code", "  \tcode", "```", "~~~", "``` js",
            "---", "***", "_ _ _", "- a", "* b", "+ c", "1. d", "12) e", "> q", "   > q", "    > q", "<!-- c -->", "<!--", "-->",
            "<div>", "</div>", "  <p>x</p>", "<details>", "[a]: /u \"t\"", "[A]: <x>", "[a]", "[a][]", "[x][a]", "![i](p.png)",
            "[l](http://x (t))", "Title", "===", "--", " =", "\u{a0}", "\u{2028}", "*em* and **strong**", "_u_ __v__", "`code` ``x``", "  - nested", " 2. n", "   ```", "  ~~~", "  # h", " <div>", "  <!-- c", "  ---", " * * *", "      deep",
            "a  ", "a\\", "\\*", "<b>t</b>", "<a@b.c>", "<http://x>", "@inc.md", "x@y", "| a | b |", "|---|", "é😀", "\r",
            "<?", "<?x ?>", "?>", "<!X y", "<!DOCTYPE html>", "<![CDATA[", "]]>", ">", "<a b=\"", "b",
            "x`", "`", "``", "x``y", "`a", "a``", "`` ` ``", "```x`", "a`b`c", "\\`",
        ];
        let doc = proptest::collection::vec((proptest::sample::select(PIECES.to_vec()), proptest::sample::select(vec!["\n", "\n", " ", "", "\n\n"])), 0..14)
            .prop_map(|v| v.into_iter().map(|(p, j)| format!("{p}{j}")).collect::<String>());
        let config = ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() };
        proptest!(config, |(src in doc, newest in any::<bool>())| {
            let dialect = Dialect { blockquote_ends_at_indented_html: newest, ..Dialect::default() };
            let with = lex_with_skipped_as(&src, dialect);
            CHECKS.with(|c| c.set(false));
            let without = lex_with_skipped_as(&src, dialect);
            CHECKS.with(|c| c.set(true));
            prop_assert_eq!(with, without, "{:?}", src);
        });
    }

    /// Hostile files whose lexing went over the rest of the text again at each line or opener
    /// (minutes, or for ever, at these sizes): each now takes one pass.
    #[test]
    fn pathological_inputs_lex_in_one_pass() {
        let cases = [
            (format!("- @a.md\n{}", "b\n".repeat(200_000)), Kind::List),
            (format!("@a.md x{}", "<?".repeat(200_000)), Kind::Paragraph),
            (format!("@a.md x{}>", "<!a ".repeat(50_000)), Kind::Paragraph),
            ("> @a\nb\n".repeat(100_000), Kind::Blockquote),
            // Runs of one, two, … backticks, none of them closed.
            (format!("x {}\n", (1..1_000).map(|n| format!("{}a ", "`".repeat(n))).collect::<String>()), Kind::Paragraph),
        ];
        for (src, kind) in cases {
            let tokens = lex(&src).unwrap();
            assert_eq!(tokens[0].kind, kind, "{}", &src[..40]);
        }
    }

    /// [`blockquote_len`] finds what marked's blockquote regex matches, in both dialects.
    #[test]
    fn blockquote_scanner_matches_the_regex() {
        use proptest::prelude::*;
        const PIECES: &[&str] = &[
            ">", "> ", ">\t", " >", "   >", "    >", "a", "text", " ", "  ", "\t", "#", "# h", "####### x", "---", "***", "_ _ _", "- a", "* b",
            "+", "1. d", "1) e", "2. f", "```", "~~~", "``` x", "<!-- c -->", "<div>", "</p>", "<pre>", "<x>", "=", "\u{2028}", "é", "",
        ];
        let line = proptest::collection::vec(proptest::sample::select(PIECES.to_vec()), 0..5).prop_map(|v| v.concat());
        let doc = proptest::collection::vec(line, 0..8).prop_map(|v| v.join("\n"));
        let config = ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() };
        proptest!(config, |(src in doc)| {
            for (regex, interrupt) in [(&*BLOCKQUOTE, &*QUOTE_INTERRUPT), (&*BLOCKQUOTE_331, &*QUOTE_INTERRUPT_331)] {
                let want = caps(regex, &src).map(|c| group_or_empty(&c, 0).len());
                prop_assert_eq!(blockquote_len(&src, interrupt), want, "{:?}", src);
            }
        });
    }

    /// marked strips a quote's markers with `/^ {0,3}>[ \t]?/gm`, and JavaScript's multiline
    /// `^` follows U+2028 and U+2029 as well as `\n` (checked with marked in Node).
    #[test]
    fn quote_markers_go_after_every_javascript_line_terminator() {
        let t = lex("> a\u{2028}> b\u{2029}  >\tc\n> d").unwrap();
        assert_eq!(t[0].text, "a\u{2028}b\u{2029}c\nd");
        assert_eq!(strip_line_prefixes("    a\u{2028}  \tb\r\tc", code_indent_len), "a\u{2028}\tb\rc");
    }

    fn kinds(tokens: &[Token]) -> Vec<(Kind, String)> {
        tokens.iter().map(|t| (t.kind, t.raw.clone())).collect()
    }

    #[test]
    fn comment_block_raw_swallows_following_blank_lines() {
        let t = lex("a\n<!-- c -->\n\n\nb\n").unwrap();
        assert_eq!(
            kinds(&t),
            vec![(Kind::Paragraph, "a\n".into()), (Kind::Html, "<!-- c -->\n\n\n".into()), (Kind::Paragraph, "b\n".into())]
        );
    }

    #[test]
    fn definitions_vanish_from_the_token_stream() {
        let t = lex("<!-- c -->\n[x]: http://e.com\ntext\n").unwrap();
        let raws: String = t.iter().map(|t| t.raw.as_str()).collect();
        assert_eq!(raws, "<!-- c -->\ntext\n");
    }

    #[test]
    fn hostile_nesting_fails_instead_of_overflowing() {
        assert_eq!(lex(&format!("{}x\n", ">".repeat(MAX_BLOCK_NESTING + 1))).unwrap_err(), LexError::TooDeep { limit: MAX_BLOCK_NESTING });
        const NODE: usize = mneme_core::versions::BLOCK_NESTING_NODE;
        let node = Dialect { max_block_nesting: NODE, ..Dialect::default() };
        let quotes = |n: usize| format!("{}x\n", ">".repeat(n));
        assert!(lex_with_skipped_as(&quotes(NODE - 1), node).is_ok());
        assert_eq!(lex_with_skipped_as(&quotes(NODE + 1), node).unwrap_err(), LexError::TooDeep { limit: NODE });
        assert!(lex(&quotes(NODE + 1)).is_ok(), "the default nests deeper");
        assert_eq!(lex(&format!("{}x{}\n", "_a ".repeat(500), " a_".repeat(500))).unwrap_err(), LexError::TooDeep { limit: MAX_INLINE_NESTING });
        // marked re-lexes a quote for every lazy line after it (cubic in the depth): the budget
        // stops this long before Claude Code, which takes minutes over it, would finish.
        let lazy = format!("{}x\nlazy\n", ">".repeat(3000));
        match lex(&lazy) {
            Err(LexError::TooDeep { limit }) => assert!((FREE_BLOCK_DEPTH..3000).contains(&limit), "{limit}"),
            other => panic!("{other:?}"),
        }
        assert!(lex(&format!("{}x{}\n", "*[".repeat(3000), "]*".repeat(3000))).is_ok());
        assert!(lex(&format!("{}x\n", ">".repeat(20))).is_ok());
    }

    #[test]
    fn emphasis_splits_text_tokens() {
        let t = lex("**b**@x.md and `c` d\n").unwrap();
        let inl = &t[0].tokens;
        assert_eq!(inl[0].kind, Kind::Strong);
        assert_eq!(inl[1].kind, Kind::Text);
        assert_eq!(inl[1].text, "@x.md and ");
        assert_eq!(inl[2].kind, Kind::Codespan);
    }

    /// Texts where marked's masks meet: escapes of BMP and astral punctuation (the one mask
    /// that changes a UTF-16 length), links, code spans, tags, non-ASCII inside brackets.
    fn mask_samples() -> Vec<String> {
        let parts = ["\\*", "\\😀", "😀", "[a](b)", "[é](x)", "`c`", "<b>", "[r]", "*a", "é", "x", " ", "\n", "[[n]]", "\\"];
        let mut out = Vec::new();
        let mut seed = 7u64;
        for len in 1..60 {
            let mut text = String::new();
            for _ in 0..len {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(parts[(seed >> 33) as usize % parts.len()]);
            }
            out.push(text);
        }
        out
    }

    #[test]
    fn one_pass_replacement_is_markeds_loop() {
        for text in mask_samples() {
            for (re, repl) in [(&*ANY_PUNCTUATION, 0), (&*BLOCK_SKIP, 1), (&*REFLINK_SEARCH, 1)] {
                let f = |m: &str| Some(if repl == 0 { "++".to_string() } else { bracket_mask(m) });
                assert_eq!(global_replace(re, &text, f), global_replace_from(re, text.clone(), 0, f), "{text:?}");
            }
        }
    }

    #[test]
    fn the_mask_cursor_is_the_tail_counted_from_the_end() {
        let mut links = HashSet::new();
        links.insert("r".to_string());
        let lexer = Lexer { links, top: true, depth: 0, max_depth: MAX_BLOCK_NESTING, deep_budget: DEEP_BLOCK_BUDGET, top_len: 0, skipped: Vec::new(), quote_interrupt: &QUOTE_INTERRUPT };
        for text in mask_samples() {
            let masked = lexer.mask(&text);
            let mut cursor = MaskCursor::new(&text, &masked);
            for (i, _) in text.char_indices() {
                let rest = &text[i..];
                let from_end = substring_from(&masked, utf16_len(&masked).saturating_sub(utf16_len(rest)));
                assert_eq!(cursor.tail_for(rest), from_end, "{text:?} at {i}");
            }
        }
    }
}
