//! Finding where an emphasis or a link ends in linear time. marked finds both by searching the
//! rest of a paragraph again for every opener, which a hostile paragraph makes quadratic; the
//! structures here answer the same questions from work shared between the openers, and the
//! tests hold them to marked's own loops.

use super::{caps, find_closing_bracket, group, group_or_empty, utf16_len, ClosingBracket, LINK_ANGLE, LINK_BARE, LINK_LABEL};
use fancy_regex::{Captures, Regex};

/// marked's link rule takes the longest run of non-blank characters after `](` after which a
/// title and `)` can follow, so each `[`…`](` of a paragraph without spaces (`[![a](b)` over
/// and over) searches to the end of the run — quadratic, and slow in the regex crate, which
/// must carry the captures through the whole run (a 64 KB such paragraph took a minute here;
/// Claude Code takes well under a second). But whether a title and `)` follow a position does
/// not depend on where the destination began, so within one run the longest destination ends
/// at the same place for every link that starts at or before it: the first link's search
/// answers the rest of the run's.
pub(super) struct LinkRuns<'a> {
    text: &'a str,
    /// The run found last: a start searched from and where its run ends.
    run: Option<(usize, usize)>,
    /// Per run end: the destination start the run was searched from, and the longest bare
    /// destination's end and the whole match's end then (absolute), if it matched.
    bare: std::collections::HashMap<usize, (usize, Option<(usize, usize)>)>,
    /// The text's parentheses, counted once a long destination needs them.
    parens: Option<Parens>,
}

impl<'a> LinkRuns<'a> {
    pub(super) fn new(text: &'a str) -> LinkRuns<'a> {
        LinkRuns { text, run: None, bare: std::collections::HashMap::new(), parens: None }
    }

    /// The link rule on `src` (a suffix of the text): the whole match, the label and the
    /// destination.
    pub(super) fn link<'s>(&mut self, src: &'s str) -> Option<(&'s str, &'s str, &'s str)> {
        let c = caps(&LINK_LABEL, src)?;
        let label = group_or_empty(&c, 1);
        let d = c.get(0)?.end();
        let (dest_end, end) = self.destination(src, d)?;
        Some((&src[..end], label, &src[d..dest_end]))
    }

    /// Where the destination starting at `d` in `src` ends, and where the match ends.
    fn destination(&mut self, src: &str, d: usize) -> Option<(usize, usize)> {
        let at = &src[d..];
        if at.starts_with('<') {
            if let Some(c) = caps(&LINK_ANGLE, at) {
                return Some((d + c.get(1)?.end(), d + c.get(0)?.end()));
            }
        }
        let base = self.text.len() - src.len();
        let abs = base + d;
        let run_end = self.run_end(abs);
        let found = match self.bare.get(&run_end) {
            // The longest destination from an earlier start in this run ends where it ends
            // for this one too, if that is not before this one's start.
            Some(&(from, found)) if from <= abs => found.filter(|&(e, _)| e >= abs),
            _ => {
                let found = caps(&LINK_BARE, at).and_then(|c| Some((abs + c.get(1)?.end(), abs + c.get(0)?.end())));
                self.bare.insert(run_end, (abs, found));
                found
            }
        };
        found.map(|(e, end)| (e - base, end - base))
    }

    /// `find_closing_bracket(destination, '(', ')')` for a destination `link` returned from
    /// `src`. The links of one run each get the rest of the run as their destination, and a
    /// paragraph of `[a]((b)` makes every one of them scan it to learn that its parentheses do
    /// not balance; a long destination is answered from counts kept for the whole text.
    pub(super) fn closing_paren(&mut self, src: &str, destination: &str) -> ClosingBracket {
        if destination.len() <= 256 {
            return find_closing_bracket(destination, '(', ')');
        }
        // Byte offsets of the destination in the text (it is a slice of `src`, a suffix).
        debug_assert!(src.as_bytes().as_ptr_range().contains(&destination.as_ptr()) || destination.is_empty());
        let from = self.text.len() - src.len() + (destination.as_ptr() as usize - src.as_ptr() as usize);
        let text = self.text;
        self.parens.get_or_insert_with(|| Parens::new(text)).closing(text, from, from + destination.len())
    }

    /// The end of the run of characters a bare destination may hold (`[^ \t\n\x00-\x1f]`)
    /// starting at `abs`.
    fn run_end(&mut self, abs: usize) -> usize {
        if let Some((from, end)) = self.run {
            if from <= abs && abs <= end {
                return end;
            }
        }
        let end = self.text.as_bytes()[abs..].iter().position(|&b| b <= b' ').map_or(self.text.len(), |p| abs + p);
        self.run = Some((abs, end));
        end
    }
}

/// marked's `findClosingBracket(s, "()")` for any slice of a text that does not start just
/// after a `\\`: the depth of parentheses before each byte (an escaped character counts for
/// nothing), the number of `)` before it, and the next byte at which the depth is lower than
/// here (just after the `)` that closes more than was opened).
struct Parens {
    depth: Vec<i32>,
    closes: Vec<u32>,
    lower: Vec<u32>,
}

impl Parens {
    fn new(text: &str) -> Parens {
        let n = text.len();
        let (mut depth, mut closes) = (vec![0i32; n + 1], vec![0u32; n + 1]);
        let (mut d, mut c, mut escaped) = (0i32, 0u32, false);
        for (i, ch) in text.char_indices() {
            for p in i..i + ch.len_utf8() {
                depth[p] = d;
                closes[p] = c;
            }
            if ch == ')' {
                c += 1;
            }
            if std::mem::take(&mut escaped) {
                continue;
            }
            match ch {
                '\\' => escaped = true,
                '(' => d += 1,
                ')' => d -= 1,
                _ => {}
            }
        }
        depth[n] = d;
        closes[n] = c;
        // Next lower depth, right to left with a stack of candidates.
        let mut lower = vec![u32::MAX; n + 1];
        let mut stack: Vec<usize> = Vec::new();
        for x in (0..=n).rev() {
            while stack.last().is_some_and(|&y| depth[y] >= depth[x]) {
                stack.pop();
            }
            if let Some(&y) = stack.last() {
                lower[x] = y as u32;
            }
            stack.push(x);
        }
        Parens { depth, closes, lower }
    }

    /// `find_closing_bracket(&text[from..to], '(', ')')`.
    fn closing(&self, text: &str, from: usize, to: usize) -> ClosingBracket {
        if self.closes[to] == self.closes[from] {
            return ClosingBracket::None;
        }
        match self.lower[from] as usize {
            // `y - 1` is the `)` that takes the depth below where the slice began.
            y if y <= to => ClosingBracket::At(utf16_len(&text[from..y - 1])),
            _ if self.depth[to] > self.depth[from] => ClosingBracket::Unbalanced,
            _ => ClosingBracket::None,
        }
    }
}

/// The right-delimiter chains of one inline text (see [`DelimChain`]), one per delimiter
/// character, made when a delimiter first needs one.
pub(super) struct EmChains<'a> {
    pub(super) masked: &'a str,
    pub(super) ast: Option<DelimChain<'a>>,
    pub(super) und: Option<DelimChain<'a>>,
}

/// A match of a right-delimiter regex that captured a delimiter run, in a [`DelimChain`]: its
/// start in the masked text, where the next search goes on, which group captured the run and
/// its length in chars; then, once known, the next such match, and the sums of what the run
/// does to an opener's count (see [`RightDelim::effect`]) from here to the end of the text.
struct RightDelim {
    start: usize,
    next: usize,
    group: u8,
    len: u32,
    /// The next delimiter match ([`UNKNOWN`] until searched, [`NONE`] at the end).
    after: u32,
    /// For each opener length mod 3, once settled: the sums of the effects from here to the
    /// end, and the next match after this one whose count-after is higher (so a search for a
    /// closer can leap the matches between, which cannot close).
    settled: Option<Settled>,
}

const UNKNOWN: u32 = u32::MAX;
const NONE: u32 = u32::MAX - 1;

fn index(i: u32) -> Option<usize> {
    (i < NONE).then_some(i as usize)
}

#[derive(Clone, Copy)]
struct Settled {
    count: [i64; 3],
    aside: [i64; 3],
    higher: [u32; 3],
}

impl RightDelim {
    /// What this run does to the count of open delimiters of an opener whose length is `l`
    /// (mod 3): another opener adds to it (groups 3 and 4); a run that could close but whose
    /// length would break the rule of three is set aside (groups 5 and 6, counted apart);
    /// any other run closes that many. Returns (change to the count, set aside).
    // `is_multiple_of` needs Rust 1.87; the workspace supports 1.85.
    #[allow(clippy::manual_is_multiple_of)]
    fn effect(&self, l: usize) -> (i64, i64) {
        let r = i64::from(self.len);
        if self.group == 3 || self.group == 4 {
            (r, 0)
        } else if (self.group == 5 || self.group == 6) && l % 3 != 0 && (l + self.len as usize) % 3 == 0 {
            (0, r)
        } else {
            (-r, 0)
        }
    }
}

/// marked looks for an emphasis's closer by running the right-delimiter regex globally over
/// the rest of the masked text, once per opening delimiter, counting openers and closers until
/// the count reaches zero — quadratic in a paragraph of thousands of unclosed `*a` (Claude
/// Code from 2.1.331 lexes such a paragraph in linear time). Here:
/// - Past the first search (which alone may take the regex's `^` alternative), a search from
///   a position finds the same match whichever opener asked, so each position is searched
///   once and the delimiter-capturing matches are linked in the order the loop meets them.
/// - From a match to the end of the text the count changes by a known sum, so the closer is
///   the first match after which the rest of the sum is high enough: found by leaping from a
///   match to the next one whose rest is higher, a handful of leaps per opener.
pub(super) struct DelimChain<'a> {
    text: &'a str,
    re: &'static Regex,
    found: Vec<RightDelim>,
    /// For each byte position searched from: the first delimiter match the searches from it
    /// reach (an index into `found`, [`NONE`], or [`UNKNOWN`] if not searched yet).
    from: Vec<u32>,
    /// Regex searches and leaps made, for the test that keeps them linear.
    steps: usize,
}

impl<'a> DelimChain<'a> {
    pub(super) fn new(text: &'a str, re: &'static Regex) -> DelimChain<'a> {
        DelimChain { text, re, found: Vec::new(), from: vec![UNKNOWN; text.len() + 2], steps: 0 }
    }

    /// Records a match found in the suffix of the text starting at `offset`: where the next
    /// search goes on (absolute), and the match's index in `found` if it captured a delimiter.
    fn push(&mut self, c: &Captures<'_, str>, offset: usize) -> (usize, Option<usize>) {
        let whole = c.get(0).map_or(0..0, |g| g.start()..g.end());
        // Every alternative consumes text; an empty match would go on one byte later, as
        // marked's `lastIndex` does.
        let next = offset + if whole.end > whole.start { whole.end } else { whole.end + 1 };
        let Some((group, run)) = (1..=6).find_map(|i| group(c, i).filter(|s| !s.is_empty()).map(|s| (i, s))) else {
            return (next, None);
        };
        self.found.push(RightDelim {
            start: offset + whole.start,
            next,
            group: group as u8,
            len: run.chars().count() as u32,
            after: UNKNOWN,
            settled: None,
        });
        (next, Some(self.found.len() - 1))
    }

    /// The first delimiter match of the searches from `pos` on (`pos` past the text's start).
    fn first_from(&mut self, pos: usize) -> Option<usize> {
        let mut asked = Vec::new();
        let mut at = pos;
        let found = loop {
            if at > self.text.len() {
                break NONE;
            }
            if self.from[at] != UNKNOWN {
                break self.from[at];
            }
            asked.push(at);
            // A search that gives up (the backtracking limit) ends the loop, as "no match".
            self.steps += 1;
            let Ok(Some(c)) = self.re.captures_from_pos(self.text, at) else { break NONE };
            match self.push(&c, 0) {
                (_, Some(i)) => break i as u32,
                (next, None) => at = next,
            }
        };
        for p in asked {
            self.from[p] = found;
        }
        index(found)
    }

    /// The delimiter match after `found[i]`.
    fn after(&mut self, i: usize) -> Option<usize> {
        if self.found[i].after == UNKNOWN {
            let next = self.first_from(self.found[i].next);
            self.found[i].after = next.map_or(NONE, |n| n as u32);
        }
        index(self.found[i].after)
    }

    /// Settles `found[i]` and every match after it, searching the rest of the text the first
    /// time.
    fn settle(&mut self, i: usize) {
        let mut path = Vec::new();
        let mut at = Some(i);
        while let Some(j) = at {
            if self.found[j].settled.is_some() {
                break;
            }
            path.push(j);
            at = self.after(j);
        }
        // From the end back, each match's sums are its own effect plus its successor's.
        for &j in path.iter().rev() {
            let next = index(self.found[j].after);
            let mut own = Settled { count: [0; 3], aside: [0; 3], higher: [NONE; 3] };
            for c in 0..3 {
                let rest = next.map_or(0, |n| self.sum(n, c));
                let (count, aside) = self.found[j].effect(c);
                own.count[c] = rest + count;
                own.aside[c] = next.and_then(|n| self.found[n].settled.as_ref()).map_or(0, |s| s.aside[c]) + aside;
                // `j`'s count-after is its successor's sum; leap over the matches whose
                // count-after is not higher.
                let mut higher = next;
                while let Some(h) = higher {
                    if self.count_after(h, c) > rest {
                        break;
                    }
                    higher = self.higher(h, c);
                }
                own.higher[c] = higher.map_or(NONE, |h| h as u32);
            }
            self.found[j].settled = Some(own);
        }
    }

    /// Of a settled match, for opener lengths `c` mod 3: the sum of the effects from it to
    /// the end, the sum after it, and the next match whose sum after is higher.
    fn sum(&self, i: usize, c: usize) -> i64 {
        self.found[i].settled.as_ref().map_or(0, |s| s.count[c])
    }
    fn count_after(&self, i: usize, c: usize) -> i64 {
        self.sum(i, c) - self.found[i].effect(c).0
    }
    fn higher(&self, i: usize, c: usize) -> Option<usize> {
        self.found[i].settled.as_ref().and_then(|s| index(s.higher[c]))
    }

    /// marked's closer search for an opening run of `l_length` delimiters, over `masked` (a
    /// suffix of the chain's text, starting just after the opening run): the closing match's
    /// start in `masked` (bytes) and the closing run's length.
    pub(super) fn closer(&mut self, masked: &str, l_length: usize) -> Option<(usize, isize)> {
        let offset = self.text.len() - masked.len();
        // Only the first search may take the regex's `^` alternative (its match starts where
        // `masked` does); its match joins the chain through the search after it.
        self.steps += 1;
        let first = match self.re.captures_from_pos(masked, 0) {
            Ok(Some(c)) => match self.push(&c, offset) {
                (_, Some(i)) => Some(i),
                (next, None) => self.first_from(next),
            },
            _ => None,
        }?;
        // The count after match k is l + sum(first..=k) = l + sum(first) - after(k); the
        // closer is the first k where that reaches zero (only a closing run lowers it, so that
        // k closes), i.e. where the sum after k reaches l + sum(first).
        let c = l_length % 3;
        self.settle(first);
        let bar = l_length as i64 + self.sum(first, c);
        let mut k = first;
        while self.count_after(k, c) < bar {
            self.steps += 1;
            k = self.higher(k, c)?;
        }
        let open = bar - self.count_after(k, c);
        let aside_from = |i: usize| self.found[i].settled.as_ref().map_or(0, |s| s.aside[c]);
        let aside = aside_from(first) - (aside_from(k) - self.found[k].effect(c).1);
        let r_length = i64::from(self.found[k].len);
        Some((self.found[k].start - offset, r_length.min(r_length + open + aside) as isize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::{EM_STRONG_RDELIM_AST, EM_STRONG_RDELIM_UND, LINK};

    /// marked's closer search as it reads (and as this lexer ran it before [`DelimChain`]):
    /// the regex run globally over the slice, every search from scratch.
    #[allow(clippy::manual_is_multiple_of)]
    fn closer_reference(re: &Regex, masked: &str, l_length: usize) -> Option<(usize, isize)> {
        let (mut delim_total, mut mid_delim_total) = (l_length as isize, 0isize);
        let mut pos = 0;
        while pos <= masked.len() {
            let Ok(Some(c)) = re.captures_from_pos(masked, pos) else { break };
            let whole = c.get(0).map_or(0..0, |g| g.start()..g.end());
            pos = if whole.end > whole.start { whole.end } else { whole.end + 1 };
            let Some(r_delim) = (1..=6).find_map(|i| group(&c, i).filter(|s| !s.is_empty())) else { continue };
            let mut r_length = r_delim.chars().count() as isize;
            if c.get(3).is_some() || c.get(4).is_some() {
                delim_total += r_length;
                continue;
            } else if (c.get(5).is_some() || c.get(6).is_some()) && l_length % 3 != 0 && (l_length as isize + r_length).rem_euclid(3) == 0 {
                mid_delim_total += r_length;
                continue;
            }
            delim_total -= r_length;
            if delim_total > 0 {
                continue;
            }
            r_length = r_length.min(r_length + delim_total + mid_delim_total);
            return Some((whole.start, r_length));
        }
        None
    }

    #[test]
    fn the_delimiter_chain_finds_markeds_closers() {
        use proptest::prelude::*;
        const PIECES: &[&str] = &[
            "*", "**", "***", "_", "__", "a", "bc", " ", ".", ",", "\n", "\t", "é", "“", "🎉", "\\", "(", ")", "-", "+", "\u{a0}",
        ];
        let text = proptest::collection::vec(proptest::sample::select(PIECES), 0..40).prop_map(|p| p.concat());
        proptest!(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() }, |(text in text, backwards in any::<bool>())| {
            for re in [&*EM_STRONG_RDELIM_AST, &*EM_STRONG_RDELIM_UND] {
                // One chain answers every opener of a text, in the lexer's order (forwards) or
                // the other way, so answers kept from one opener are reused by the others.
                let mut chain = DelimChain::new(&text, re);
                let mut starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
                if backwards {
                    starts.reverse();
                }
                for start in starts {
                    for l_length in 1..=4 {
                        let masked = &text[start..];
                        prop_assert_eq!(chain.closer(masked, l_length), closer_reference(re, masked, l_length), "{:?} from byte {}", text, start);
                    }
                }
            }
        });
    }

    #[test]
    fn openers_without_closers_cost_linear_work() {
        // 2,000 openers and no closer: marked searches the rest of the text for each, about
        // 2,000,000 regex searches. The chain searches each position once, and each opener
        // leaps to where its count could reach zero: with nothing but openers after it, nowhere;
        // with `**a b*` (two open, one closed: the count only grows), nowhere either.
        for (unit, l_length) in [("*a ", 1), ("**a b* ", 2)] {
            let text = unit.repeat(2000);
            let mut chain = DelimChain::new(&text, &EM_STRONG_RDELIM_AST);
            for start in (0..text.len()).step_by(unit.len()) {
                assert_eq!(chain.closer(&text[start + l_length..], l_length), None);
            }
            assert!(chain.steps <= 6 * 2000, "{unit:?}: {} steps", chain.steps);
        }
    }

    #[test]
    fn link_runs_match_markeds_link_rule() {
        use proptest::prelude::*;
        const PIECES: &[&str] = &[
            "[", "]", "(", ")", "![", "](", "a", "b)", " ", "\t", "\n", "<", ">", "\"", "'", "\\", "`", "\u{a0}", "é", "[a](b)",
            "<x>", "\"t\"", "(t)", "\\)", "🎉",
        ];
        let text = proptest::collection::vec(proptest::sample::select(PIECES), 0..40).prop_map(|p| p.concat());
        proptest!(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() }, |(text in text)| {
            // One memo for the whole text, asked at every `[` in the lexer's order.
            let mut runs = LinkRuns::new(&text);
            for (i, _) in text.char_indices() {
                let rest = &text[i..];
                let expected = caps(&LINK, rest).map(|c| (group_or_empty(&c, 0), group_or_empty(&c, 1), group_or_empty(&c, 2)));
                prop_assert_eq!(runs.link(rest), expected, "{:?} from byte {}", text, i);
            }
        });
    }

    #[test]
    fn long_destinations_close_where_markeds_scan_does() {
        use proptest::prelude::*;
        // Destinations over 256 bytes are answered from the text's parenthesis counts.
        const PIECES: &[&str] = &["[a](", "![a](", "(", ")", "(b)", "b", "\\", "\\)", "é", "[", "]"];
        let piece = || proptest::collection::vec(proptest::sample::select(PIECES), 1..8).prop_map(|p| p.concat());
        proptest!(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() }, |(head in piece(), unit in piece(), times in 20usize..80, tail in piece())| {
            let text = format!("{head}{}{tail}", unit.repeat(times));
            let mut runs = LinkRuns::new(&text);
            for (i, _) in text.char_indices() {
                let rest = &text[i..];
                if let Some((_, _, destination)) = runs.link(rest) {
                    let want = find_closing_bracket(destination, '(', ')');
                    let got = runs.closing_paren(rest, destination);
                    prop_assert!(
                        matches!((&want, &got), (ClosingBracket::None, ClosingBracket::None) | (ClosingBracket::Unbalanced, ClosingBracket::Unbalanced))
                            || matches!((&want, &got), (ClosingBracket::At(a), ClosingBracket::At(b)) if a == b),
                        "{:?} from byte {}", text, i
                    );
                }
            }
        });
    }

    #[test]
    fn links_in_one_run_search_it_once() {
        // 2,000 images in a paragraph without spaces: each `[` and `![` asks for the longest
        // destination of the same run; one search of the run answers them all.
        let text = "[![a](b)".repeat(2000);
        let mut runs = LinkRuns::new(&text);
        let mut links = 0;
        for (i, _) in text.char_indices() {
            if runs.link(&text[i..]).is_some() {
                links += 1;
            }
        }
        // Asked at every character: `![a](b)` matches at its `!` and, as a link, at its `[`.
        assert_eq!(links, 4000);
        assert_eq!(runs.bare.len(), 1);
    }

    #[test]
    fn paren_counts_answer_find_closing_bracket() {
        use proptest::prelude::*;
        const PIECES: &[&str] = &["(", ")", "\\", "a", "é", "🎉", "\\(", "\\)", "\\\\", " "];
        let text = proptest::collection::vec(proptest::sample::select(PIECES), 0..30).prop_map(|p| p.concat());
        proptest!(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() }, |(text in text)| {
            let parens = Parens::new(&text);
            let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
            for &from in &bounds {
                // A destination never starts just after a backslash (it follows `(` or a space).
                if text[..from].ends_with('\\') {
                    continue;
                }
                for &to in bounds.iter().filter(|&&to| to >= from) {
                    let want = find_closing_bracket(&text[from..to], '(', ')');
                    let got = parens.closing(&text, from, to);
                    prop_assert!(
                        matches!((&want, &got), (ClosingBracket::None, ClosingBracket::None) | (ClosingBracket::Unbalanced, ClosingBracket::Unbalanced))
                            || matches!((&want, &got), (ClosingBracket::At(a), ClosingBracket::At(b)) if a == b),
                        "{:?} [{}..{}]", text, from, to
                    );
                }
            }
        });
    }
}
