//! Shell commands: the strict reader, Claude Code's read-only classifier, and the memory
//! policy's `rm` rule.

pub(crate) mod parse;
mod readonly;
mod tables;

pub use readonly::is_read_only_command;

pub(crate) use parse::parse;

/// Commands that are read-only whatever their arguments (Claude Code's READONLY_COMMANDS, one
/// word each) plus the listing and searching commands Claude Code itself guards under a
/// prefix rule, sorted: the `Bash(<cmd>:*)` rules a headless Claude Code gets.
pub(crate) fn read_only_prefixes(which: mneme_core::versions::BashReadOnlyTables) -> Vec<String> {
    let mut cmds: Vec<String> = tables::tables(which).readonly.iter().filter(|c| !c.contains(' ')).cloned().collect();
    cmds.extend(["ls", "find", "grep", "rg", "pwd"].map(String::from));
    cmds.sort();
    cmds.dedup();
    cmds
}
use mneme_core::versions::Profile;
use mneme_store::paths::node_normalize;

/// The `rm` the memory policy allows (Claude Code 2.1.197): one plain `rm` command, no
/// redirections or assignments, no recursive flag, and every operand an absolute `*.md`
/// path without glob characters inside the memory folder. From 2.1.219 the only flags are
/// `-f` and `--force`, and each operand must be a path the agents may write
/// (`Profile::memory_rm_checked_as_writes`: no protected folder name, from 2.1.315 no `:`);
/// from 2.1.337 it has no `..` segment either (`Profile::memory_rm_refuses_parent_segments`).
/// `memory_prefix` is the folder with its trailing `/`.
pub fn is_memory_rm_command(command: &str, memory_prefix: &str, release: &Profile) -> bool {
    memory_rm_targets(command, memory_prefix, release).is_some()
}

/// Whether `path` has a `..` segment (`/` or `\` around it, or at an end), as 2.1.337's `rm`
/// rule asks before it normalizes the path.
fn has_parent_segment(path: &str) -> bool {
    path.split(['/', '\\']).any(|seg| seg == "..")
}

/// The operands of an allowed `rm` and whether `-f` was given.
pub(crate) fn memory_rm_targets(command: &str, memory_prefix: &str, release: &Profile) -> Option<(Vec<String>, bool)> {
    let mut commands = parse(command).ok()?;
    if commands.len() != 1 {
        return None;
    }
    let cmd = commands.pop()?;
    if cmd.argv.first().is_none_or(|a| a != "rm") || !cmd.redirects.is_empty() || !cmd.env.is_empty() {
        return None;
    }
    let mut targets = Vec::new();
    let (mut after_dashes, mut force) = (false, false);
    for a in &cmd.argv[1..] {
        if !after_dashes {
            if a == "--" {
                after_dashes = true;
                continue;
            }
            if release.memory_rm_checked_as_writes && a.starts_with('-') {
                if a != "-f" && a != "--force" {
                    return None;
                }
                force = true;
                continue;
            }
            if let Some(flags) = a.strip_prefix('-') {
                let short_recursive = !flags.starts_with('-') && flags.contains(['r', 'R']);
                if a == "--recursive" || short_recursive {
                    return None;
                }
                force |= a == "--force" || (!a.starts_with("--") && a.contains('f'));
                continue;
            }
        }
        if a.contains(['*', '?', '[']) || !a.starts_with('/') || !a.ends_with(".md") {
            return None;
        }
        if release.memory_rm_refuses_parent_segments && has_parent_segment(a) {
            return None;
        }
        if !node_normalize(a).starts_with(memory_prefix) {
            return None;
        }
        if release.memory_rm_checked_as_writes && !crate::policy::is_auto_mem_write_path(a, memory_prefix, release) {
            return None;
        }
        targets.push(a.clone());
    }
    (!targets.is_empty()).then_some((targets, force))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The classifier table: what Claude Code's `isReadOnly` accepts and refuses.
    #[test]
    fn read_only_table() {
        let accepted = [
            "ls",
            "ls -la /home/u/.claude/projects/x/memory/",
            "ls *.md",
            "cat /m/MEMORY.md",
            "head -n 20 a.md",
            "tail -5 a.md",
            "wc -l /m/MEMORY.md",
            "stat a.md",
            "grep -rn \"deploy\" /m/ --include=*.md",
            "grep -c foo a.md b.md",
            "grep -A3 -i foo a.md",
            "rg -n foo /m",
            "find /m -name '*.md' -mtime -7",
            "find . -type f -maxdepth 2",
            "cat a.md | grep x | wc -l",
            "cat a.md 2>/dev/null",
            "ls -la 2>&1",
            "cat < a.md",
            "echo hello",
            "pwd",
            "sort -u a.txt",
            "diff a.md b.md",
            "date +%Y-%m-%d",
            "git log --oneline -n 5",
            "git status --short",
            "git diff --stat",
            "tree -L 2",
            "sed -n '1,20p' a.md",
            "sed 's/a/b/g'",
            "LANG=C ls",
            "du -sh /m",
            "file a.md",
            "command ls",
            "xargs grep foo",
            "printf '%s\\n' hello",
            "test -f a.md",
            "jq '.a' x.json",
        ];
        let refused = [
            "rm a.md",
            "rm -rf /",
            "echo x > a.md",
            "echo x >> a.md",
            "cat a.md > b.md",
            "echo $(id)",
            "echo `id`",
            "ls; rm a.md",
            "ls && touch a.md",
            "ls || mv a b",
            "cat a | sh",
            "find . -delete",
            "find . -name x -exec rm {} \\;",
            "find . -execdir ls \\;",
            "sed -i 's/a/b/' a.md",
            "sed 's/a/b/w out' a.md",
            "touch a.md",
            "mkdir x",
            "mv a.md b.md",
            "cp a.md b.md",
            "chmod 600 a.md",
            "tee a.md",
            "curl https://example.com",
            "python3 -c 'print(1)'",
            "FOO=bar ls",
            "ls &",
            "(ls)",
            "cd /tmp && git log",
            "git log --format=myalias",
            "git log --pretty='%G?'",
            "git -c core.pager=sh log",
            "git branch newbranch",
            "git tag v1",
            "git push",
            "sort -o out.txt a.txt",
            "date -s '2020-01-01'",
            "xargs rm",
            "cat *.md > all.md",
            "rm *.md",
            "echo {a,b}",
            "bash -c ls",
            "eval ls",
            "",
        ];
        // The port follows 2.1.197's code; its tables are that release's.
        let tables = mneme_core::versions::behaviours("2.1.197".parse().unwrap()).bash_read_only;
        for c in accepted {
            assert!(is_read_only_command(c, tables), "should be read-only: {c:?}");
        }
        for c in refused {
            assert!(!is_read_only_command(c, tables), "should not be read-only: {c:?}");
        }
    }

    #[test]
    fn memory_rm_rule() {
        let p = "/h/.claude/projects/x/memory/";
        let release = mneme_core::versions::newest();
        let ok = |c: &str| is_memory_rm_command(c, p, &release);
        assert!(ok("rm /h/.claude/projects/x/memory/old.md"));
        assert!(ok("rm -f /h/.claude/projects/x/memory/a.md /h/.claude/projects/x/memory/team/b.md"));
        assert!(ok("rm -- /h/.claude/projects/x/memory/a.md"));
        assert!(ok("rm '/h/.claude/projects/x/memory/a b.md'"));
        assert_eq!(
            memory_rm_targets("rm -f /h/.claude/projects/x/memory/a.md", p, &release),
            Some((vec!["/h/.claude/projects/x/memory/a.md".to_string()], true))
        );
        for bad in [
            "rm",
            "rm -r /h/.claude/projects/x/memory/a.md",
            "rm -rf /h/.claude/projects/x/memory/a.md",
            "rm --recursive /h/.claude/projects/x/memory/a.md",
            "rm /h/.claude/projects/x/memory/*.md",
            "rm /h/.claude/projects/x/memory/a.txt",
            "rm a.md",
            "rm /h/.claude/projects/x/memory/../other/a.md",
            "rm /h/.claude/projects/x/memory-old/a.md",
            "rm /h/.claude/projects/x/memory/a.md > /dev/null",
            "rm /h/.claude/projects/x/memory/a.md; ls",
            "X=1 rm /h/.claude/projects/x/memory/a.md",
        ] {
            assert!(!ok(bad), "{bad:?}");
        }
    }

    /// From 2.1.219 `rm` takes no flag but `-f`/`--force` and each operand answers to the
    /// write rule (no protected folder name); from 2.1.315 a `:` after the memory folder is
    /// refused too. Releases before keep 2.1.197's rule (any flag but a recursive one).
    #[test]
    fn memory_rm_answers_to_the_write_rule_from_2_1_219() {
        let p = "/h/.claude/projects/x/memory/";
        let at = |v: &str| mneme_core::versions::behaviours(v.parse().unwrap());
        let (r218, r219, r314, r315) = (at("2.1.218"), at("2.1.219"), at("2.1.314"), at("2.1.315"));
        for c in [
            "rm -v /h/.claude/projects/x/memory/a.md",
            "rm -i /h/.claude/projects/x/memory/a.md",
            "rm -fv /h/.claude/projects/x/memory/a.md",
            "rm - /h/.claude/projects/x/memory/a.md",
            "rm /h/.claude/projects/x/memory/.git/a.md",
            "rm /h/.claude/projects/x/memory/team/Agents./a.md",
        ] {
            assert!(is_memory_rm_command(c, p, &r218), "2.1.218: {c:?}");
            assert!(!is_memory_rm_command(c, p, &r219), "2.1.219: {c:?}");
        }
        assert_eq!(memory_rm_targets("rm -fv /h/.claude/projects/x/memory/a.md", p, &r218).map(|t| t.1), Some(true));
        for c in ["rm -f /h/.claude/projects/x/memory/a.md", "rm --force -- /h/.claude/projects/x/memory/team/a.md"] {
            assert_eq!(memory_rm_targets(c, p, &r219).map(|t| t.1), Some(true), "{c:?}");
        }
        for c in ["rm /h/.claude/projects/x/memory/a:b.md", "rm /h/.claude/projects/x/memory/x:y/a.md"] {
            assert!(is_memory_rm_command(c, p, &r314), "2.1.314: {c:?}");
            assert!(!is_memory_rm_command(c, p, &r315), "2.1.315: {c:?}");
        }
    }

    /// From 2.1.337 an operand with a `..` segment is refused before the path is normalized,
    /// even when it stays inside the memory folder (`/` or `\` around it); 2.1.332 judged
    /// the normalized path.
    #[test]
    fn memory_rm_refuses_parent_segments_from_2_1_337() {
        let p = "/h/.claude/projects/x/memory/";
        let [before, after] = ["2.1.332", "2.1.337"].map(|v| mneme_core::versions::behaviours(v.parse().unwrap()));
        for c in [
            "rm /h/.claude/projects/x/memory/team/../a.md",
            "rm -f /h/.claude/projects/x/memory/a.md /h/.claude/projects/x/memory/team/../b.md",
            // Quoted, so the backslash reaches rm.
            "rm '/h/.claude/projects/x/memory/..\\a.md'",
        ] {
            assert!(is_memory_rm_command(c, p, &before), "2.1.332: {c:?}");
            assert!(!is_memory_rm_command(c, p, &after), "2.1.337: {c:?}");
        }
        // A name that only holds two dots is no `..` segment.
        for c in ["rm /h/.claude/projects/x/memory/a..b.md", "rm /h/.claude/projects/x/memory/..a.md"] {
            assert!(is_memory_rm_command(c, p, &before) && is_memory_rm_command(c, p, &after), "{c:?}");
        }
    }
}
