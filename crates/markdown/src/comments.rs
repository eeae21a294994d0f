//! Claude Code's HTML comment stripping (`stripHtmlComments`): which top-level tokens are
//! comment blocks, the text left without them, and where each kept byte came from. Both the
//! CLAUDE.md loader and the memory folder (which lines of `MEMORY.md` a comment hides) use it,
//! so one reading of the file decides both.

use crate::{Kind, Token};
use mneme_core::text::{js_trim, js_trim_start};
use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// `/<!--[\s\S]*?-->/g`
pub static COMMENT_SPAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<!--(?s:.*?)-->").expect("comment regex"));

/// Whether a top-level HTML token is a comment block: it opens with `<!--` and closes one.
pub fn is_comment_block(raw: &str) -> bool {
    let trimmed = js_trim_start(raw);
    trimmed.starts_with("<!--") && trimmed.contains("-->")
}

/// `stripHtmlComments(content).content`.
pub fn strip_html_comments(content: &str) -> Option<String> {
    if !content.contains("<!--") {
        return Some(content.to_string());
    }
    crate::lex(content).ok().map(|t| strip_html_comments_from_tokens(&t))
}

/// Where [`strip_html_comments`]' result comes from: the byte ranges of `content` it keeps,
/// in order, so a caller can tell which lines of the file survive and where they land. The
/// result is these ranges joined with CRLF and lone CR turned into LF (marked normalizes line
/// ends when it lexes, and the stripped text is rebuilt from its tokens). `None` when there
/// is no `<!--` (the text is used as it is, line ends included) or marked throws.
pub fn html_comment_kept_ranges(content: &str) -> Option<Vec<Range<usize>>> {
    kept_ranges(content, false).map(|(kept, _)| kept)
}

/// [`html_comment_kept_ranges`] for the releases that re-render only a file a comment block is
/// removed from, keeping its link reference definitions (from 2.1.330,
/// `Profile::comments_rerender_only_when_removed`): `None` too when no comment block is removed,
/// since such a file is used as it is (its lone CRs kept), and the definitions marked skips
/// are among the ranges kept.
pub fn html_comment_kept_ranges_rerendered_only_when_removed(content: &str) -> Option<Vec<Range<usize>>> {
    kept_ranges(content, true).and_then(|(kept, removed)| removed.then_some(kept))
}

/// The ranges kept, and whether a comment block was removed. `keep_defs`: link reference
/// definitions stay in the text (newer releases' re-rendering).
fn kept_ranges(content: &str, keep_defs: bool) -> Option<(Vec<Range<usize>>, bool)> {
    if !content.contains("<!--") {
        return None;
    }
    let (tokens, skipped) = crate::lex_with_skipped(content).ok()?;
    let mut skipped = skipped.into_iter().peekable();
    // `origin[i]`: where byte `i` of the LF-normalized text starts in `content`.
    let norm = content.replace("\r\n", "\n").replace('\r', "\n");
    let bytes = content.as_bytes();
    let mut origin = Vec::with_capacity(bytes.len() + 1);
    let mut i = 0;
    while i < bytes.len() {
        origin.push(i);
        i += if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
    }
    origin.push(bytes.len());
    let mut kept: Vec<Range<usize>> = Vec::new();
    let mut keep = |a: usize, b: usize| {
        if a == b {
            return;
        }
        let (a, b) = (origin[a], origin[b]);
        match kept.last_mut() {
            Some(last) if last.end == a => last.end = b,
            _ => kept.push(a..b),
        }
    };
    let mut pos = 0;
    let mut removed = false;
    for t in &tokens {
        while let Some(gap) = skipped.next_if(|g| g.start == pos) {
            if keep_defs {
                keep(gap.start, gap.end);
            }
            pos = gap.end;
        }
        let end = pos + t.raw.len();
        // marked rewrites the raw text of a few tokens (a list's trailing blanks); their
        // place in the file is then unknown, and so is everything after them.
        if norm.get(pos..end) != Some(t.raw.as_str()) {
            return None;
        }
        if t.kind == Kind::Html && is_comment_block(&t.raw) {
            removed = true;
            let residue = COMMENT_SPAN.replace_all(&t.raw, "");
            if !js_trim(&residue).is_empty() {
                let mut at = 0;
                for m in COMMENT_SPAN.find_iter(&t.raw) {
                    keep(pos + at, pos + m.start());
                    at = m.end();
                }
                keep(pos + at, end);
            }
        } else {
            keep(pos, end);
        }
        pos = end;
    }
    for gap in skipped {
        if gap.start != pos {
            return None;
        }
        if keep_defs {
            keep(gap.start, gap.end);
        }
        pos = gap.end;
    }
    // The tokens' raw text (and the skipped definitions) cover the normalized input exactly; anything else means the
    // offsets above cannot be trusted.
    (pos + 1 == origin.len()).then_some((kept, removed))
}

/// `stripHtmlCommentsFromTokens`: the top-level tokens' raw text, with comment-only HTML
/// blocks removed (a block's non-blank residue after its comment spans is kept).
pub fn strip_html_comments_from_tokens(tokens: &[Token]) -> String {
    let mut out = String::new();
    for t in tokens {
        if t.kind == Kind::Html && is_comment_block(&t.raw) {
            let residue = COMMENT_SPAN.replace_all(&t.raw, "");
            if !js_trim(&residue).is_empty() {
                out.push_str(&residue);
            }
            continue;
        }
        out.push_str(&t.raw);
    }
    out
}

/// Newer releases' re-rendering: the comment blocks go, everything else stays as marked read
/// it (line ends made LF), link reference definitions included, which the token list alone
/// does not hold. `None` when the tokens do not line up with the text.
pub fn strip_html_comments_keeping_defs(body: &str, tokens: &[Token], defs: &[Range<usize>]) -> Option<String> {
    let src = body.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(src.len());
    let mut pos = 0;
    let mut defs = defs.iter().peekable();
    for t in tokens {
        while let Some(d) = defs.peek().filter(|d| d.start == pos) {
            out.push_str(src.get(d.start..d.end)?);
            pos = d.end;
            defs.next();
        }
        if !src.get(pos..)?.starts_with(&t.raw) {
            return None;
        }
        if t.kind == Kind::Html && is_comment_block(&t.raw) {
            let residue = COMMENT_SPAN.replace_all(&t.raw, "");
            if !js_trim(&residue).is_empty() {
                out.push_str(&residue);
            }
        } else {
            out.push_str(&t.raw);
        }
        pos += t.raw.len();
    }
    out.push_str(src.get(pos..)?);
    Some(out)
}

