//! Claude Code's `sanitizePath`: how an absolute folder becomes a name under
//! `<config>/projects/`. It works on UTF-16 code units, so `é` becomes one `-` and most
//! emoji become two.

/// `MAX_SANITIZED_LENGTH` in `src/utils/sessionStoragePortable.ts`.
pub const MAX_SANITIZED_LENGTH: usize = 200;

/// The folder name Claude Code 2.1.197 writes for `path`.
///
/// Names over 200 units keep their first 200 and gain `-` + base-36 of the absolute value of
/// the Java-style 32-bit string hash of the *original* path. The observed binary writes this
/// suffix (not Bun's Wyhash), so readers must still fall back to prefix matching for folders
/// written by other builds; see [`long_name_prefix`].
pub fn sanitize_path(path: &str) -> String {
    let units: Vec<u16> = path.encode_utf16().collect();
    let sanitized: String = units
        .iter()
        .map(|&u| if u < 128 && (u as u8).is_ascii_alphanumeric() { u as u8 as char } else { '-' })
        .collect();
    if sanitized.len() <= MAX_SANITIZED_LENGTH {
        return sanitized;
    }
    format!("{}-{}", &sanitized[..MAX_SANITIZED_LENGTH], base36(java_string_hash(&units).unsigned_abs() as u64))
}

/// For a long path, the `<first 200>-` prefix that every runtime's folder name starts with.
/// `None` when the name is short enough to be exact.
pub fn long_name_prefix(path: &str) -> Option<String> {
    let full = sanitize_path(path);
    if full.len() <= MAX_SANITIZED_LENGTH {
        None
    } else {
        Some(format!("{}-", &full[..MAX_SANITIZED_LENGTH]))
    }
}

/// `h = ((h << 5) - h + unit) | 0` over UTF-16 units, i.e. Java's `String.hashCode`.
fn java_string_hash(units: &[u16]) -> i32 {
    units.iter().fold(0i32, |h, &u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_like_claude_code() {
        for (input, expect) in [
            ("/Users/alice/code/my-project", "-Users-alice-code-my-project"),
            ("/home/bob/src/foo_bar.baz", "-home-bob-src-foo-bar-baz"),
            ("C:\\Users\\Carol\\repo", "C--Users-Carol-repo"),
            ("/tmp/café/π", "-tmp-caf---"),
            ("/tmp/😀", "-tmp---"),
            ("/tmp/ccfix/paths/My Repo.v2_x", "-tmp-ccfix-paths-My-Repo-v2-x"),
        ] {
            assert_eq!(sanitize_path(input), expect, "{input}");
        }
    }

    #[test]
    fn long_paths_get_the_observed_hash_suffix() {
        // The 217-character path of the conformance fixture `paths__long`.
        let p = format!(
            "/tmp/ccfix/paths/{}",
            (0..6).map(|i| format!("a-very-long-directory-name-segment-{i:02}")).collect::<Vec<_>>().join("/")
        );
        let name = sanitize_path(&p);
        assert!(name.ends_with("-z5d6me"), "{name}");
        assert_eq!(name.len(), 207);
        assert_eq!(long_name_prefix(&p).unwrap(), format!("{}-", &name[..200]));
        let djb = format!("/home/dave/{}project", "very-long-directory-name/".repeat(9));
        assert!(sanitize_path(&djb).ends_with("-vwq4kv"));
    }

    #[test]
    fn two_hundred_units_exactly_is_kept() {
        let p = format!("/{}", "a".repeat(199));
        assert_eq!(sanitize_path(&p).len(), 200);
        assert!(long_name_prefix(&p).is_none());
    }
}
