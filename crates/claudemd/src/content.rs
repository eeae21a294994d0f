//! What Claude Code does to one memory file's text (`parseMemoryFileContent`,
//! `stripHtmlComments`, `extractIncludePathsFromTokens`): frontmatter off, block-level HTML
//! comments off, MEMORY.md truncated, and the `@include` paths found.

use crate::marked::comments::{is_comment_block, strip_html_comments_from_tokens, strip_html_comments_keeping_defs, COMMENT_SPAN};
use crate::marked::{self, Kind, Token};
use crate::paths;
use mneme_core::frontmatter;
use mneme_core::text::{is_js_whitespace, js_trim, truncate_entrypoint_with};
use mneme_core::Profile;
use std::collections::HashSet;

/// `TEXT_FILE_EXTENSIONS`: `@include` targets must have one of these extensions, or none.
/// Note the list holds `.R` in upper case while the extension is lower-cased first, so only
/// `.r` can ever match it.
pub const TEXT_FILE_EXTENSIONS: &[&str] = &[
    ".md", ".txt", ".text", ".json", ".yaml", ".yml", ".toml", ".xml", ".csv", ".html", ".htm", ".css", ".scss",
    ".sass", ".less", ".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".py", ".pyi", ".pyw", ".rb",
    ".erb", ".rake", ".go", ".rs", ".java", ".kt", ".kts", ".scala", ".c", ".cpp", ".cc", ".cxx", ".h", ".hpp",
    ".hxx", ".cs", ".swift", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".env", ".ini", ".cfg",
    ".conf", ".config", ".properties", ".sql", ".graphql", ".gql", ".proto", ".vue", ".svelte", ".astro", ".ejs",
    ".hbs", ".pug", ".jade", ".php", ".pl", ".pm", ".lua", ".r", ".R", ".dart", ".ex", ".exs", ".erl", ".hrl",
    ".clj", ".cljs", ".cljc", ".edn", ".hs", ".lhs", ".elm", ".ml", ".mli", ".f", ".f90", ".f95", ".for", ".cmake",
    ".make", ".makefile", ".gradle", ".sbt", ".rst", ".adoc", ".asciidoc", ".org", ".tex", ".latex", ".lock",
    ".log", ".diff", ".patch",
];

/// Node's `path.extname`: from the last `.` of the last segment, unless that dot leads it.
pub fn extname(path: &str) -> &str {
    let base = path.rsplit('/').next().unwrap_or(path);
    match base.rfind('.') {
        Some(0) | None => "",
        Some(i) => &base[i..],
    }
}

/// Whether `parseMemoryFileContent` accepts the file's extension.
pub fn has_text_extension(path: &str) -> bool {
    let ext = extname(path).to_lowercase();
    ext.is_empty() || TEXT_FILE_EXTENSIONS.contains(&ext.as_str())
}

/// The result of parsing one file (`MemoryFileInfo` plus the include paths).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub content: String,
    pub globs: Option<Vec<String>>,
    pub content_differs_from_disk: bool,
    pub truncated: bool,
    pub include_paths: Vec<String>,
}

/// Why a file yields nothing at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseFailure {
    NonTextExtension,
    /// The lexer refused it: marked threw (Claude Code's reader catches it and drops the file),
    /// or it nests past what the port lexes.
    Lexer(marked::LexError),
}

/// Which files are truncated as a memory index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    None,
    /// MEMORY.md: cut to its caps, with the note in the release's wording.
    Entrypoint,
}

/// `parseMemoryFileContent(raw, filePath, type, includeBasePath)`. `include_base` is the
/// symlink-resolved path of the file; `None` for MEMORY.md, whose includes are not expanded.
pub fn parse_memory_file_content(
    raw: &str,
    file_path: &str,
    truncation: Truncation,
    include_base: Option<&str>,
    home: &str,
    profile: &Profile,
) -> Result<Parsed, ParseFailure> {
    if !has_text_extension(file_path) {
        return Err(ParseFailure::NonTextExtension);
    }
    let original = raw;
    // Newer releases read MEMORY.md's CRLF line ends as LF before anything else.
    let unified;
    let raw = if truncation == Truncation::Entrypoint && profile.memory_index_crlf_to_lf && raw.contains("\r\n") {
        unified = raw.replace("\r\n", "\n");
        unified.as_str()
    } else {
        raw
    };
    // Newer releases look past a byte-order mark for the frontmatter (older ones saw no
    // frontmatter there, so a rule's `paths:` did not apply).
    let parsed = match raw.strip_prefix('\u{FEFF}') {
        Some(rest) if profile.frontmatter_after_bom && frontmatter::parse(rest).frontmatter.is_some() => {
            frontmatter::parse_with(rest, profile.frontmatter_reader)
        }
        _ => frontmatter::parse_with(raw, profile.frontmatter_reader),
    };
    let globs = frontmatter::rule_globs_as(parsed.frontmatter.as_ref(), profile);
    let body = parsed.body;
    let has_comment = body.contains("<!--");
    // An include needs an `@`; without one (and without a comment to strip) lexing cannot
    // change the result, and most files have neither.
    // Most files with an `@` are plain paragraphs (2,000 rules each naming a shared file):
    // there the include regex over the whole body finds exactly what it finds over marked's
    // text tokens, and lexing them was most of a large load's time.
    let dialect = marked::Dialect {
        blockquote_ends_at_indented_html: profile.blockquote_ends_at_indented_html,
        max_block_nesting: profile.block_nesting,
    };
    // Lexing can also fail: past the nesting limit Claude Code's lexer runs out of stack and the
    // file is dropped. Every block level opens on a line with one more character of container
    // syntax in front (`>`, a list marker, indentation), so a file whose lines never start with
    // that many cannot nest that deep and need not be lexed to see; releases before 2.1.242
    // lex every file that can include, `@` or not.
    let could_be_too_deep = longest_container_prefix(body) >= dialect.max_block_nesting;
    let has_include =
        include_base.is_some() && (body.contains('@') || (could_be_too_deep && !profile.lexes_only_files_with_at));
    if has_include && !has_comment && truncation == Truncation::None && is_plain_text(body) && !could_be_too_deep {
        let mut includes = Includes::default();
        if let Some(base) = include_base {
            extract_from_text(body, &paths::dirname(base), home, &mut includes);
        }
        let include_paths = includes.order;
        let content = body.to_string();
        let content_differs_from_disk = content != original;
        // Plain text has no truncation to do here: only MEMORY.md is truncated, and it has no
        // include base.
        return Ok(Parsed { content, globs, content_differs_from_disk, truncated: false, include_paths });
    }
    let lexed = if has_comment || has_include {
        Some(marked::lex_with_skipped_as(body, dialect).map_err(ParseFailure::Lexer)?)
    } else {
        None
    };
    let tokens = lexed.as_ref().map(|(t, _)| t);
    // Rebuilt from tokens only when a comment is present: marked turns CRLF into LF, so only
    // then does the whole file become LF.
    let stripped = match (&lexed, has_comment) {
        (Some((t, defs)), true) if profile.comments_rerender_only_when_removed => {
            if t.iter().any(|t| t.kind == Kind::Html && is_comment_block(&t.raw)) {
                strip_html_comments_keeping_defs(body, t, defs).unwrap_or_else(|| strip_html_comments_from_tokens(t))
            } else {
                body.to_string()
            }
        }
        (Some((t, _)), true) => strip_html_comments_from_tokens(t),
        _ => body.to_string(),
    };
    let include_paths = match (tokens, include_base) {
        (Some(t), Some(base)) => extract_include_paths(t, base, home),
        _ => Vec::new(),
    };
    let (content, truncated) = match truncation {
        Truncation::Entrypoint => {
            let t = truncate_entrypoint_with(&stripped, profile.truncation_note);
            let was = t.was_truncated();
            // The releases that read CRLF as LF also send a lone CR (a classic Mac line end)
            // as LF, but only after measuring and cutting: it does not count as a line
            // towards the 200 (2.1.284 sends a 207-line index holding one lone CR cut at
            // 200 lines, as 201 lines).
            let content = if profile.memory_index_crlf_to_lf && t.content.contains('\r') { t.content.replace('\r', "\n") } else { t.content };
            (content, was)
        }
        Truncation::None => (stripped, false),
    };
    let content_differs_from_disk = content != original;
    Ok(Parsed { content, globs, content_differs_from_disk, truncated, include_paths })
}

/// Whether marked reads `body` as nothing but paragraphs and ATX headings of plain text, with
/// no construct that hides text (code, HTML, links) or splits a text token where the include
/// regex would see a difference (emphasis, escapes, autolinks, an `@` right after a word).
/// Then every text token is a stretch of the body bounded by whitespace, and the regex over
/// the body finds the same paths in the same order. Deliberately narrow: printable ASCII
/// only, and anything doubtful goes to the lexer (`plain_text_agrees_with_the_lexer` checks
/// it against the lexer on tricky inputs).
/// The most characters of container syntax (blank, `>`, a list marker's `-*+`, digits, `.`,
/// `)`) any line starts with: a bound on how deep the file's blocks can nest.
fn longest_container_prefix(body: &str) -> usize {
    body.split('\n')
        .map(|line| {
            line.bytes()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'>' | b'-' | b'*' | b'+' | b'.' | b')' | b'0'..=b'9'))
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn is_plain_text(body: &str) -> bool {
    let bytes = body.as_bytes();
    if !bytes.iter().all(|&b| b == b'\n' || (b' '..=b'~').contains(&b)) {
        return false;
    }
    if bytes.iter().any(|b| matches!(b, b'`' | b'~' | b'<' | b'>' | b'[' | b']' | b'!' | b'*' | b'_' | b'\\' | b'|' | b'&')) {
        return false;
    }
    // GFM autolinks (`http://`, `ftp://`, `www.`) and e-mail addresses split text tokens.
    if body.contains("://") || body.to_ascii_lowercase().contains("www.") {
        return false;
    }
    if body.match_indices('@').any(|(i, _)| i > 0 && !matches!(bytes[i - 1], b' ' | b'\n')) {
        return false;
    }
    body.split('\n').all(|line| {
        let t = line.trim_start_matches(' ');
        // Indented code, list items, setext underlines, thematic breaks.
        if line.len() - t.len() >= 4 && !t.is_empty() {
            return false;
        }
        match t.as_bytes().first() {
            Some(b'-' | b'+' | b'=') => false,
            Some(b'0'..=b'9') => !t.trim_start_matches(|c: char| c.is_ascii_digit()).starts_with(['.', ')']),
            _ => true,
        }
    })
}

/// The paths of `/(?:^|\s)@((?:[^\s\\]|\\ )+)/g` (JavaScript's `\s`) in `text`, in order: an
/// `@` at the start or after whitespace, then a run of characters that are neither whitespace
/// nor `\`, or are `\ ` (an escaped space). Written out rather than compiled: the regex, with
/// its Unicode classes, took ~2 ms to build in every process that met an `@`, most of a
/// small repository's `mneme context`; a test holds this to the regex.
fn include_paths(text: &str) -> impl Iterator<Item = &str> {
    let mut from = 0;
    std::iter::from_fn(move || {
        while from < text.len() {
            // Where an `@` may start a path: at the very start, or after a whitespace character.
            let at = if from == 0 && text.starts_with('@') {
                0
            } else {
                let (i, c) = text[from..].char_indices().map(|(i, c)| (from + i, c)).find(|&(i, c)| {
                    is_js_whitespace(c) && text[i + c.len_utf8()..].starts_with('@')
                })?;
                i + c.len_utf8()
            };
            let start = at + 1;
            let mut end = start;
            let mut rest = text[start..].chars().peekable();
            while let Some(c) = rest.next() {
                if c == '\\' {
                    if rest.peek() != Some(&' ') {
                        break;
                    }
                    rest.next();
                    end += 2;
                } else if is_js_whitespace(c) {
                    break;
                } else {
                    end += c.len_utf8();
                }
            }
            if end > start {
                from = end;
                return Some(&text[start..end]);
            }
            // `@` with no path after it: look again just after it (`@` is one byte).
            from = start;
        }
        None
    })
}

/// `extractIncludePathsFromTokens(tokens, basePath)`: absolute paths in order of first
/// appearance, deduplicated.
pub fn extract_include_paths(tokens: &[Token], base_path: &str, home: &str) -> Vec<String> {
    let mut out = Includes::default();
    let base_dir = paths::dirname(base_path);
    walk(tokens, &base_dir, home, &mut out);
    out.order
}

/// Include paths in order of first appearance. The set makes each new path one lookup: with a
/// scan of the list instead, a file of a few hundred thousand `@` paths took minutes.
#[derive(Default)]
struct Includes {
    order: Vec<String>,
    seen: HashSet<String>,
}

fn walk(tokens: &[Token], base_dir: &str, home: &str, out: &mut Includes) {
    crate::marked::grow(|| walk_inner(tokens, base_dir, home, out))
}

fn walk_inner(tokens: &[Token], base_dir: &str, home: &str, out: &mut Includes) {
    for t in tokens {
        match t.kind {
            Kind::Code | Kind::Codespan => continue,
            Kind::Html => {
                if is_comment_block(&t.raw) {
                    let residue = COMMENT_SPAN.replace_all(&t.raw, "");
                    if !js_trim(&residue).is_empty() {
                        extract_from_text(&residue, base_dir, home, out);
                    }
                }
                continue;
            }
            Kind::Text => extract_from_text(&t.text, base_dir, home, out),
            _ => {}
        }
        walk(&t.tokens, base_dir, home, out);
        walk(&t.items, base_dir, home, out);
    }
}

fn extract_from_text(text: &str, base_dir: &str, home: &str, out: &mut Includes) {
    for mut path in include_paths(text) {
        if let Some(i) = path.find('#') {
            path = &path[..i];
        }
        if path.is_empty() {
            continue;
        }
        let path = path.replace("\\ ", " ");
        if path.is_empty() || !is_valid_include(&path) {
            continue;
        }
        let resolved = paths::expand_path(&path, base_dir, home);
        if out.seen.insert(resolved.clone()) {
            out.order.push(resolved);
        }
    }
}

/// `@./x`, `@~/x`, `@/x` (not `/` alone), or a bare path starting `[a-zA-Z0-9._-]` that does
/// not start with `@` or a run of `#%^&*()`.
fn is_valid_include(path: &str) -> bool {
    if path.starts_with("./") || path.starts_with("~/") || (path.starts_with('/') && path != "/") {
        return true;
    }
    let first = path.chars().next().unwrap_or(' ');
    !path.starts_with('@') && !"#%^&*()".contains(first) && (first.is_ascii_alphanumeric() || "._-".contains(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`include_paths`] finds exactly what Claude Code's regex finds.
    #[test]
    fn include_scanner_matches_the_regex() {
        use proptest::prelude::*;
        let ws = marked::WS;
        let re = regex::Regex::new(&format!(r"(?:^|[{ws}])@((?:[^{ws}\\]|\\ )+)")).unwrap();
        let pieces = vec!["@", "@", "@", " ", " ", "\\", "\\ ", "a", "b.md", "#x", "\n", "\t", "\u{a0}", "\u{3000}", "\u{feff}", "\u{85}", "é", "😀", "./", "~/", "@@"];
        let text = proptest::collection::vec(proptest::sample::select(pieces), 0..24).prop_map(|v| v.concat());
        let config = ProptestConfig { cases: 5000, failure_persistence: None, ..ProptestConfig::default() };
        proptest!(config, |(t in text)| {
            let want: Vec<&str> = re.captures_iter(&t).map(|c| c.get(1).unwrap().as_str()).collect();
            let got: Vec<&str> = include_paths(&t).collect();
            prop_assert_eq!(got, want, "{:?}", t);
        });
    }

    fn strip(s: &str) -> String {
        crate::strip_html_comments(s).unwrap()
    }

    #[test]
    fn strip_table() {
        let cases: &[(&str, &str, &str)] = &[
            ("no comment", "a\r\nb\r\n", "a\r\nb\r\n"),
            ("crlf with comment becomes lf", "a\r\n<!-- x -->\r\nb\r\n", "a\nb\n"),
            ("blank lines after the block go too", "a\n\n<!-- x -->\n\n\nb\n", "a\n\nb\n"),
            ("residue kept", "<!-- note --> Use bun\nnext\n", " Use bun\nnext\n"),
            ("inline comment kept", "text <!-- c --> more\n", "text <!-- c --> more\n"),
            ("unclosed kept", "a\n\n<!-- open\nrest\n", "a\n\n<!-- open\nrest\n"),
            ("in fence kept", "```\n<!-- c -->\n```\n", "```\n<!-- c -->\n```\n"),
            ("in codespan kept", "`<!-- c -->`\n", "`<!-- c -->`\n"),
            ("interrupts a paragraph", "para\n<!-- c -->\nafter\n", "para\nafter\n"),
            ("multi-line block", "<!--\nline\n-->\nx\n", "x\n"),
            ("two on one line", "<!-- a --><!-- b -->\nx\n", "x\n"),
            ("definition and blank lines lost on rebuild", "<!-- c -->\n\n[r]: http://x\n\ntext\n", "text\n"),
            ("indented 4 is code", "    <!-- c -->\n", "    <!-- c -->\n"),
            ("in list item kept", "- item\n  <!-- c -->\n", "- item\n  <!-- c -->\n"),
        ];
        for (name, input, want) in cases {
            assert_eq!(strip(input), *want, "{name}");
        }
    }

    fn includes(s: &str) -> Vec<String> {
        let t = marked::lex(s).unwrap();
        extract_include_paths(&t, "/r/CLAUDE.md", "/h")
            .into_iter()
            .map(|p| p.strip_prefix("/r/").map(str::to_string).unwrap_or(p))
            .collect()
    }

    #[test]
    fn include_table() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("plain", "see @a.md\n", &["a.md"]),
            ("start of line", "@a.md\n", &["a.md"]),
            ("dot slash", "@./x/y.md\n", &["x/y.md"]),
            ("home", "@~/u.md\n", &["/h/u.md"]),
            ("absolute", "@/etc/x.md\n", &["/etc/x.md"]),
            ("slash alone", "@/ x\n", &[]),
            ("fragment", "@f.md#sec\n", &["f.md"]),
            ("only fragment", "@#sec\n", &[]),
            ("escaped space", "@with\\ space.md\n", &["with space.md"]),
            ("email", "user@example.com foo@x.md\n", &[]),
            ("parenthesised", "(@p.md)\n", &[]),
            ("npm scope", "uses @tresjs/core here\n", &["tresjs/core"]),
            ("double at", "@@x.md\n", &[]),
            ("punctuation start", "@*x.md @(y)\n", &[]),
            ("fence", "```\n@f.md\n```\n", &[]),
            ("indented code", "    @i.md\n", &[]),
            ("codespan", "a `@c.md` b\n", &[]),
            ("html comment", "<!-- @h.md -->\n", &[]),
            ("comment residue", "<!-- x --> @r.md\n", &["r.md"]),
            ("list", "- item @l.md\n", &["l.md"]),
            ("quote", "> q @q.md\n", &["q.md"]),
            ("heading", "# H @h.md\n", &["h.md"]),
            ("emphasis", "*@e.md*\n", &["e.md"]),
            ("after strong", "**b**@s.md\n", &["s.md"]),
            ("dedupe", "@a.md @a.md\n", &["a.md"]),
            ("escape splits", "x \\_@e.md\n", &["e.md"]),
            ("link text", "[see @l.md](http://x)\n", &["l.md"]),
            ("html block hides", "<div>\n@d.md\n</div>\n", &[]),
            ("tight list codespan text", "- `x @c.md`\n", &["c.md`"]),
            ("unclosed comment hides the rest", "<!-- open\n@x.md\n", &[]),
            ("parent dir", "@../up.md\n", &["/up.md"]),
            ("unicode", "@dé/ü😀.md\n", &["dé/ü😀.md"]),
        ];
        for (name, input, want) in cases {
            assert_eq!(includes(input), *want, "{name}");
        }
    }

    #[test]
    fn extensions() {
        assert!(has_text_extension("/a/b.md"));
        assert!(has_text_extension("/a/Makefile"));
        assert!(has_text_extension("/a/.env"));
        assert!(has_text_extension("/a/X.MD"));
        assert!(!has_text_extension("/a/i.png"));
        assert!(!has_text_extension("/a/b.md.bak"));
        assert!(has_text_extension("/a/s.R"));
    }

    #[test]
    fn memory_md_is_truncated_and_never_included() {
        let p = parse_memory_file_content("---\nx: y\n---\n@a.md\n<!-- c -->\n", "/m/MEMORY.md", Truncation::Entrypoint, None, "/h", &mneme_core::versions::newest()).unwrap();
        assert_eq!(p.content, "@a.md");
        assert!(p.include_paths.is_empty());
        assert!(p.content_differs_from_disk);
    }

    /// Outputs of the real 2.1.283 and 2.1.284 (docs/claude-code-versions.md, row 9): a lone CR
    /// in MEMORY.md is no line towards the 200, and from 2.1.284 it is sent as LF after the cut.
    #[test]
    fn a_lone_cr_in_memory_md_by_release() {
        use mneme_core::versions::behaviours;
        let index = format!("- a\r- b\r\n- c\n{}", (0..205).map(|i| format!("- l{i}\n")).collect::<String>());
        let parse = |release: &str| {
            parse_memory_file_content(&index, "/m/MEMORY.md", Truncation::Entrypoint, None, "/h", &behaviours(release.parse().unwrap())).unwrap().content
        };
        let (old, new) = (parse("2.1.283"), parse("2.1.284"));
        assert!(old.starts_with("- a\r- b\r\n- c\n- l0\n"), "{old:?}");
        assert!(new.starts_with("- a\n- b\n- c\n- l0\n"), "{new:?}");
        assert!(new.contains("- l197\n\n> WARNING: MEMORY.md is 207 lines (limit: 200)") && !new.contains("- l198\n"), "{new:?}");
    }

    /// Outputs of the real 2.1.330 and 2.1.332 (docs/claude-code-versions.md, row 18): from
    /// 2.1.331 an indented comment ends a blockquote's lazy continuation and is stripped; a
    /// top-level paragraph still keeps it, and four spaces are still text.
    #[test]
    fn indented_comment_after_a_blockquote_by_release() {
        use mneme_core::versions::behaviours;
        let v = |s: &str| s.parse().unwrap();
        let parse = |text: &str, release: &str| {
            parse_memory_file_content(text, "/p/CLAUDE.md", Truncation::None, Some("/p/CLAUDE.md"), "/h", &behaviours(v(release)))
                .unwrap()
                .content
        };
        for (text, old, new) in [
            ("> q\n  <!-- c -->\nafter\n", "> q\n  <!-- c -->\nafter\n", "> q\nafter\n"),
            ("> q\n   <!-- c -->\nafter\n", "> q\n   <!-- c -->\nafter\n", "> q\nafter\n"),
            ("> > q\n  <!-- c -->\nafter\n", "> > q\n  <!-- c -->\nafter\n", "> > q\nafter\n"),
            ("> q\n <!-- c --> tail\nafter\n", "> q\n <!-- c --> tail\nafter\n", "> q\n  tail\nafter\n"),
            ("> q\n    <!-- c -->\nafter\n", "> q\n    <!-- c -->\nafter\n", "> q\n    <!-- c -->\nafter\n"),
            ("para\n  <!-- c -->\nafter\n", "para\n  <!-- c -->\nafter\n", "para\n  <!-- c -->\nafter\n"),
        ] {
            assert_eq!(parse(text, "2.1.330"), old, "2.1.330 on {text:?}");
            assert_eq!(parse(text, "2.1.332"), new, "2.1.332 on {text:?}");
        }
    }

    /// Nesting up to the limit (which Claude Code loads too) lexes on a thread with a small stack: the lexer grows its
    /// stack on the heap, and the token tree it returns is walked for includes and dropped
    /// there. (Nested inline and list lexing is quadratic or worse, in marked too: the inline
    /// and list documents are only as deep as a small stack needs.)
    #[test]
    fn nesting_claude_code_loads_lexes_on_a_small_stack() {
        let docs = [
            (format!("<!-- c -->\n{} deep @q.md\n", ">".repeat(3000)), 2990),
            (format!("<!-- c -->\n{}deep @l.md\n", "- ".repeat(1500)), 1490),
            (format!("<!-- c -->\n{}@e.md{}\n", "_a ".repeat(marked::MAX_INLINE_NESTING - 10), " a_".repeat(marked::MAX_INLINE_NESTING - 10)), marked::MAX_INLINE_NESTING - 20),
            (format!("<!-- c -->\n{}@s.md{}\n", "**a ".repeat(marked::MAX_INLINE_NESTING - 10), " a**".repeat(marked::MAX_INLINE_NESTING - 10)), marked::MAX_INLINE_NESTING - 20),
            ((0..200).map(|i| format!("{}- x @inc{i}.md\n", "  ".repeat(i))).collect::<String>(), 190),
        ];
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                for (doc, min_depth) in docs {
                    let tokens = marked::lex(&doc).expect("Claude Code loads this nesting");
                    fn depth(ts: &[Token]) -> usize {
                        marked::grow(|| ts.iter().map(|t| 1 + depth(&t.tokens).max(depth(&t.items))).max().unwrap_or(0))
                    }
                    assert!(depth(&tokens) > min_depth, "nested {} deep", depth(&tokens));
                    let includes = extract_include_paths(&tokens, "/r/CLAUDE.md", "/h");
                    assert!(!includes.is_empty(), "the innermost @path is found");
                }
            })
            .unwrap()
            .join()
            .expect("no stack overflow");
    }
}

#[cfg(test)]
mod oracle {
    /// Differential cases: random documents built from fragments that stress marked's block
    /// and inline rules (lists, quotes, lazy lines, fences, HTML blocks, emphasis, links,
    /// escapes, CRLF), with the strip and include results of real marked 15.0.12 running
    /// Claude Code's functions (`tests/data/marked_oracle.mjs`).
    #[test]
    fn port_matches_real_marked() {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../tests/data/marked_oracle.json")).expect("oracle json");
        let cases = data["cases"].as_array().expect("cases");
        assert!(cases.len() >= 400);
        let mut placed = 0;
        for (i, case) in cases.iter().enumerate() {
            let input = case["input"].as_str().expect("input");
            let want_strip = case["strip"].as_str().expect("strip");
            let want_inc: Vec<&str> = case["includes"].as_array().expect("includes").iter().filter_map(|v| v.as_str()).collect();
            let got_strip = crate::strip_html_comments(input).expect("lexes");
            let tokens = crate::marked::lex(input).expect("lexes");
            let got_inc = super::extract_include_paths(&tokens, "/r/CLAUDE.md", "/h");
            assert_eq!(got_strip, want_strip, "case {i} strip: {input:?}");
            if let Some(kept) = crate::html_comment_kept_ranges(input) {
                let rebuilt = kept.iter().map(|r| &input[r.clone()]).collect::<String>().replace("\r\n", "\n").replace('\r', "\n");
                assert_eq!(rebuilt, want_strip, "case {i} kept ranges: {input:?}");
                placed += 1;
            }
            assert_eq!(got_inc, want_inc, "case {i} includes: {input:?}");
        }
        // Lists and quotes whose raw marked rewrites cannot be placed; the rest must be.
        assert!(placed >= 150, "only {placed} cases placed");
    }
}

#[cfg(test)]
mod plain_text_tests {
    use super::*;

    fn via_lexer(body: &str) -> Vec<String> {
        let tokens = marked::lex(body).expect("lexes");
        extract_include_paths(&tokens, "/r/CLAUDE.md", "/h")
    }

    fn direct(body: &str) -> Vec<String> {
        let mut out = Includes::default();
        extract_from_text(body, "/r", "/h", &mut out);
        out.order
    }

    /// Wherever the fast path is taken, it must agree with the lexer; the tricky cases must
    /// not take it (they differ, or might).
    #[test]
    fn plain_text_agrees_with_the_lexer() {
        let plain = [
            "Rule 1: keep functions short. See @../shared.md\n",
            "# Project\nSee @docs/a.md\nSee @docs/b.md\n\n## More #\n@c.md and @d.md#frag\n",
            "@a.md\n@a.md\n   @b.md  \n@c.md\n",
            "Line one  \n@after-break.md (with parens) and 'quotes' ; done.\n",
            "#nothead is text\n2026 was a year @y.md\n#######seven @z.md\n",
            "@/abs/path.md @./rel.md @/ @#x @ alone\n",
        ];
        for body in plain {
            assert!(is_plain_text(body), "{body:?} should take the fast path");
            assert_eq!(direct(body), via_lexer(body), "{body:?}");
        }
        let tricky = [
            "a@b.md\n",
            "@@twice.md\n",
            "#@nothead.md\n",
            "x @foo@bar.md\n",
            "    @indented.md\n",
            "- @list.md\n",
            "1. @numbered.md\n",
            "Title\n===\n@x.md\n",
            "> @quote.md\n",
            "`@code.md`\n",
            "@a*b*.md\n",
            "@a_b.md\n",
            "@foohttp://x\n",
            "see www.x.com @y.md\n",
            "@~/home.md\n",
            "<!-- c --> @x.md\n",
            "[@link.md](u)\n",
            "@a!b.md\n",
            "caf\u{e9} @x.md\n",
            "@x.md\r\n",
        ];
        for body in tricky {
            assert!(!is_plain_text(body), "{body:?} must go to the lexer");
        }
    }
}
