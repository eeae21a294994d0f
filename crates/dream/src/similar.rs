//! Near-duplicate detection: token sets and word shingles compared with Jaccard similarity.
//! Deterministic, explainable ("82% of the words are shared") and cheap enough to compare
//! every pair of candidates that share a rare word.

use std::collections::HashSet;

/// Words too common to say anything about what a memory is about.
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is", "it", "its", "of", "on",
    "or", "that", "the", "this", "to", "was", "were", "will", "with", "we", "you", "i", "not", "do", "does", "use",
    // The structure words of Claude Code's feedback/project bodies ("**Why:**", "**How to
    // apply:**") are in nearly every memory.
    "why", "how", "apply",
];

/// Lower-case words (letters and digits; numbers kept whatever their length, so "phase 2" and
/// "phase 3" differ), stop words removed.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| (w.chars().count() > 1 || w.chars().all(|c| c.is_ascii_digit())) && !STOP.contains(&w.as_str()))
        .collect()
}

pub fn token_set(text: &str) -> HashSet<String> {
    words(text).into_iter().collect()
}

/// Consecutive three-word shingles.
pub fn shingles(text: &str) -> HashSet<String> {
    let w = words(text);
    w.windows(3).map(|s| s.join(" ")).collect()
}

/// |A ∩ B| / |A ∪ B|; two empty sets are not similar (nothing to compare).
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let inter = a.iter().filter(|x| b.contains(*x)).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// Whitespace-collapsed, lower-cased text, for "the same line" and "already contains".
pub fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// What a memory looks like to the duplicate finder.
#[derive(Debug, Clone)]
pub struct Fingerprint {
    /// Name and description.
    pub head: HashSet<String>,
    pub body: HashSet<String>,
    pub body_shingles: HashSet<String>,
    pub body_normalized: String,
}

impl Fingerprint {
    pub fn new(name: &str, description: &str, body: &str) -> Self {
        Fingerprint {
            head: token_set(&format!("{name} {description}")),
            body: token_set(body),
            body_shingles: shingles(body),
            body_normalized: normalized(body),
        }
    }
}

/// Thresholds for "the same memory written twice".
pub const HEAD_MIN: f64 = 0.6;
pub const BODY_WITH_HEAD_MIN: f64 = 0.5;
/// Bodies this alike need only related names.
pub const BODY_MIN: f64 = 0.7;
pub const HEAD_WITH_BODY_MIN: f64 = 0.3;
pub const SHINGLE_MIN: f64 = 0.7;
/// Shingle similarity needs enough text to mean anything.
pub const SHINGLE_MIN_COUNT: usize = 5;

/// Whether two memories (of the same type) say the same thing, and why, as a short phrase.
pub fn near_duplicate(a: &Fingerprint, b: &Fingerprint) -> Option<String> {
    if !a.body_normalized.is_empty() && a.body_normalized == b.body_normalized {
        return Some("identical text".into());
    }
    let head = jaccard(&a.head, &b.head);
    let body = jaccard(&a.body, &b.body);
    if (head >= HEAD_MIN && body >= BODY_WITH_HEAD_MIN) || (body >= BODY_MIN && head >= HEAD_WITH_BODY_MIN) {
        return Some(format!(
            "{:.0}% of the name/description words and {:.0}% of the body words are shared",
            head * 100.0,
            body * 100.0
        ));
    }
    if a.body_shingles.len().min(b.body_shingles.len()) >= SHINGLE_MIN_COUNT {
        let sh = jaccard(&a.body_shingles, &b.body_shingles);
        if sh >= SHINGLE_MIN {
            return Some(format!("{:.0}% of the three-word phrases are shared", sh * 100.0));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_numbers_and_drop_noise() {
        assert_eq!(words("Phase 2: the API is *frozen*!"), ["phase", "2", "api", "frozen"]);
        assert_eq!(words("Ünïcode wörds"), ["ünïcode", "wörds"]);
    }

    #[test]
    fn near_duplicates_are_found_and_distinct_memories_are_not() {
        let a = Fingerprint::new("Prefers tabs", "Use tabs for indentation", "Always indent with tabs.\n**Why:** team style.");
        let b = Fingerprint::new("Tabs preference", "Use tabs for indentation in code", "Always indent with tabs, never spaces.\n**Why:** team style.");
        assert!(near_duplicate(&a, &b).is_some());
        let c = Fingerprint::new("Phase 2", "Phase 2 plan", "Build the exporter.");
        let d = Fingerprint::new("Phase 3", "Phase 3 plan", "Ship the UI.");
        assert_eq!(near_duplicate(&c, &d), None);
        let e = Fingerprint::new("x", "y", "Same body text here.");
        let f = Fingerprint::new("z", "w", "same   body text HERE.");
        assert_eq!(near_duplicate(&e, &f).as_deref(), Some("identical text"));
        let empty = Fingerprint::new("", "", "");
        assert_eq!(near_duplicate(&empty, &empty), None);
    }
}
