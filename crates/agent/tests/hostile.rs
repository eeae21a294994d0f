//! Hostile shell commands for the memory agent's Bash policy: the read-only classifier and
//! the memory `rm` check must answer (refusing whatever they cannot analyse) for any text,
//! including 12,000-deep `$(`, quotes that never close, NUL and invalid UTF-8 turned lossy.

use mneme_agent::{is_memory_rm_command, is_read_only_command};
use mneme_core::versions::{self, BashReadOnlyTables};
use mneme_testsupport::hostile::{config, mutated_text, text};
use proptest::prelude::*;

fn commands() -> Vec<Vec<u8>> {
    [
        "ls -la /tmp && cat a.txt | head -n 5",
        "git log --oneline -5; git status",
        "rm /home/u/.claude/projects/p/memory/old.md",
        "grep -rn 'x' src/ 2>/dev/null | wc -l",
        "FOO=1 echo \"a $b\" 'c' > out.txt",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// The newest release's.
fn newest() -> BashReadOnlyTables {
    versions::newest().bash_read_only
}

const NESTED: &[&str] = &["$(", "`", "(", "{ ", "\"", "'", "\\", "<(", "${", "|", "&&", ";", "<<", "#"];

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn damaged_commands(cmd in mutated_text(commands())) {
        let _ = is_read_only_command(&cmd, newest());
        let _ = is_memory_rm_command(&cmd, "/home/u/.claude/projects/p/memory/");
    }

    #[test]
    fn arbitrary_commands(cmd in text()) {
        let _ = is_read_only_command(&cmd, newest());
        let _ = is_memory_rm_command(&cmd, "/m/");
    }

    /// Nesting the classifier refuses (substitution, subshells, groups) is never read-only.
    #[test]
    fn deep_nesting_is_not_read_only(piece in proptest::sample::select(NESTED.to_vec()), n in 1usize..12_000, tail in text()) {
        let cmd = format!("ls {}{tail}", piece.repeat(n));
        let refused = ["$(", "`", "(", "<(", "${"].contains(&piece);
        prop_assert!(!(refused && is_read_only_command(&cmd, newest())), "read-only: {:?}", cmd);
        let _ = is_memory_rm_command(&cmd, "/m/");
    }
}

/// Line continuations split a redirection (`2\<newline>>x` is `2>x` to bash) so that a word the
/// classifier reads as an argument is not one, and the flags after it pair up differently:
/// each of these ran a command or deleted a tree. None is read-only.
#[test]
fn line_continuations_never_pass_as_read_only() {
    for cmd in [
        "find ~ -printf 2\\\n>/dev/null -name -delete",
        "find . -printf 2\\\n>/dev/null -name -exec sh -c 'id > /tmp/x' \\;",
        "printf 2\\\n>/dev/null -v 'BASH_CMDS[cat]' %s /bin/sh; cat -c 'id > /tmp/x'",
        "cat a \\\n b",
        "ls -la \\\n",
    ] {
        for tables in BashReadOnlyTables::all() {
            assert!(!is_read_only_command(cmd, tables), "read-only by {tables:?}: {cmd:?}");
        }
    }
    assert!(BashReadOnlyTables::all().into_iter().all(|t| is_read_only_command("cat a b", t)));
}
