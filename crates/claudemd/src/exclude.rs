//! `claudeMdExcludes` (`isClaudeMdExcluded` + `resolveExcludePatterns`): picomatch globs with
//! `dot: true` against the absolute, `/`-separated path. Absolute patterns are also tried with
//! their static directory prefix realpath-resolved, so `/tmp/x/**` still matches when the
//! project really lives under `/private/tmp`.

use crate::paths;
use crate::picomatch::{Matcher, Options};

#[derive(Debug, Clone)]
pub struct Excludes {
    /// (pattern as written, compiled form); realpath variants carry their source pattern.
    matchers: Vec<(String, std::sync::Arc<Matcher>)>,
}

impl Excludes {
    pub fn new(patterns: &[String]) -> Self {
        let mut expanded: Vec<(String, String)> =
            patterns.iter().map(|p| (p.clone(), p.replace('\\', "/"))).collect();
        let originals = expanded.clone();
        for (source, normalized) in &originals {
            if !normalized.starts_with('/') {
                continue;
            }
            let glob_start = normalized.find(['*', '?', '{', '[']);
            let static_prefix = match glob_start {
                Some(i) => &normalized[..i],
                None => normalized.as_str(),
            };
            let dir = paths::dirname(static_prefix);
            let (resolved, _) = paths::safe_resolve_path(&dir);
            let resolved = resolved.replace('\\', "/");
            if resolved != dir && normalized.len() >= dir.len() {
                expanded.push((source.clone(), format!("{resolved}{}", &normalized[dir.len()..])));
            }
        }
        let matchers = expanded
            .into_iter()
            .filter(|(_, p)| !p.is_empty())
            .filter_map(|(source, p)| {
                // picomatch's own rules (crate::picomatch). A pattern picomatch refuses (over
                // 64 KiB) matches nothing.
                let matcher = Matcher::new(&p, Options { dot: true })?;
                Some((source, std::sync::Arc::new(matcher)))
            })
            .collect();
        Excludes { matchers }
    }

    /// The (as-written) pattern that excludes `path`, if any.
    pub fn matching(&self, path: &str) -> Option<&str> {
        let normalized = path.replace('\\', "/");
        self.matchers.iter().find(|(_, m)| m.is_match(&normalized)).map(|(s, _)| s.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_too_large_to_compile_matches_nothing_instead_of_panicking() {
        let huge = format!("**/{}", "?".repeat(200_000));
        let ex = Excludes::new(&[huge, "**/vendor/**".to_string()]);
        assert_eq!(ex.matching("/r/vendor/CLAUDE.md"), Some("**/vendor/**"));
        assert_eq!(ex.matching("/r/CLAUDE.md"), None);
    }

    #[test]
    fn picomatch_like_matching() {
        let ex = Excludes::new(&[
            "**/vendor/**".to_string(),
            "/abs/dir/CLAUDE.md".to_string(),
            "/x/*.md".to_string(),
            "".to_string(),
        ]);
        assert_eq!(ex.matching("/r/vendor/a/CLAUDE.md"), Some("**/vendor/**"));
        assert_eq!(ex.matching("/abs/dir/CLAUDE.md"), Some("/abs/dir/CLAUDE.md"));
        assert_eq!(ex.matching("/x/.hidden.md"), Some("/x/*.md"));
        assert_eq!(ex.matching("/x/sub/a.md"), None);
        assert_eq!(ex.matching("/r/CLAUDE.md"), None);
    }

    /// Expected values from picomatch 4 (`isMatch(path, [pattern], { dot: true })`).
    #[test]
    fn agrees_with_picomatch() {
        let table: &[(&str, &str, bool)] = &[
            ("**/CLAUDE.md", "/tmp/x/CLAUDE.md", true),
            ("/tmp/**", "/tmp/a/b.md", true),
            ("*.md", "/tmp/a.md", false),
            ("**/vendor/**", "/r/vendor/a/CLAUDE.md", true),
            ("/x/*.md", "/x/.hidden.md", true),
            ("/x/*.md", "/x/sub/a.md", false),
            ("**/.claude/rules/**", "/r/.claude/rules/a.md", true),
            ("/r/{a,b}/CLAUDE.md", "/r/b/CLAUDE.md", true),
            ("/r/[ab]/CLAUDE.md", "/r/a/CLAUDE.md", true),
            ("/r/?/CLAUDE.md", "/r/a/CLAUDE.md", true),
            ("**", "/r/a.md", true),
            ("/r/**/CLAUDE.md", "/r/CLAUDE.md", true),
            ("/r/dir", "/r/dir/CLAUDE.md", false),
            ("/r/dir/", "/r/dir/CLAUDE.md", false),
            // Where picomatch's rules are its own.
            ("/r/[!a]/CLAUDE.md", "/r/b/CLAUDE.md", false),
            ("!**/keep/**", "/r/CLAUDE.md", true),
            ("/r/(a|b)/CLAUDE.md", "/r/b/CLAUDE.md", true),
            ("**/{CLAUDE}.md", "/r/CLAUDE.md", false),
            ("/r/@(docs|notes)/**", "/r/notes/CLAUDE.md", true),
            ("/r/!(keep)/CLAUDE.md", "/r/keep/CLAUDE.md", false),
            ("/r/!(keep)/CLAUDE.md", "/r/drop/CLAUDE.md", true),
        ];
        for (pattern, path, want) in table {
            let ex = Excludes::new(&[pattern.to_string()]);
            assert_eq!(ex.matching(path).is_some(), *want, "{pattern} vs {path}");
        }
    }

    #[test]
    fn realpath_variant_of_an_absolute_pattern() {
        let t = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(real.join("real")).unwrap();
        std::os::unix::fs::symlink(real.join("real"), real.join("link")).unwrap();
        // Only the static prefix's dirname is resolved: `<link>/sub/*.md` → dirname `<link>`.
        let pattern = format!("{}/link/sub/*.md", real.display());
        let ex = Excludes::new(std::slice::from_ref(&pattern));
        assert_eq!(ex.matching(&format!("{}/real/sub/a.md", real.display())), Some(pattern.as_str()));
        assert_eq!(ex.matching(&format!("{}/link/sub/a.md", real.display())), Some(pattern.as_str()));
        // A literal path whose directory does not exist gets no variant.
        let literal = format!("{}/link/missing/CLAUDE.md", real.display());
        let ex2 = Excludes::new(std::slice::from_ref(&literal));
        assert_eq!(ex2.matching(&format!("{}/real/missing/CLAUDE.md", real.display())), None);
    }
}
