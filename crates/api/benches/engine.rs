//! Engine benchmarks (`npm run bench`): the material Claude Code reads at start-up, at the
//! sizes a demanding user reaches. Figures are written down in docs/benchmarks.md.

use mneme_api::{ContextRequest, FixedClock, MemoryListFilter, Mneme};
use mneme_testsupport::{populate_memdir, populate_rules, write_file, TestHome};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

fn main() {
    // Build the fixtures before timing starts, so no sample pays for them.
    world();
    divan::main();
}

struct World {
    _home: TestHome,
    mneme: Mneme,
    big_memdir_repo: PathBuf,
    deep_cwd: PathBuf,
    rules_repo: PathBuf,
    includes_repo: PathBuf,
    emphasis_repo: PathBuf,
}

/// Built once: a repo with 10,000 topic files, a 30-level folder chain with CLAUDE.md and
/// CLAUDE.local.md at every level, a repo with 2,000 rules files, a repo whose CLAUDE.md
/// includes 500 files, and one whose CLAUDE.md is a paragraph of 20,000 emphasis openers
/// that never close (which marked takes quadratic time over).
fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let home = TestHome::new();
        let big = home.git_repo("big");
        populate_memdir(&home.memdir_for(&big), 10_000);

        let mut deep = home.git_repo("deep");
        for level in 0..30 {
            deep = deep.join(format!("level-{level:02}"));
            write_file(&deep.join("CLAUDE.md"), &format!("# Level {level}\nUse the level-{level} conventions.\n"));
            write_file(&deep.join("CLAUDE.local.md"), &format!("Local note for level {level}.\n"));
        }

        let rules = home.git_repo("rules");
        populate_rules(&rules, 2_000);

        let includes = home.git_repo("includes");
        let mut claude_md = String::from("# Project\n");
        for i in 0..500 {
            write_file(&includes.join(format!("docs/part-{i:03}.md")), &format!("Part {i}: a short instruction.\n"));
            claude_md.push_str(&format!("See @docs/part-{i:03}.md\n"));
        }
        write_file(&includes.join("CLAUDE.md"), &claude_md);

        let emphasis = home.git_repo("emphasis");
        // The comment makes the file go through the lexer (to be taken out).
        write_file(&emphasis.join("CLAUDE.md"), &format!("<!-- note -->\n{}\n", "*a ".repeat(20_000)));

        let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_800_000_000)));
        World {
            mneme,
            big_memdir_repo: big,
            deep_cwd: deep,
            rules_repo: rules,
            includes_repo: includes,
            emphasis_repo: emphasis,
            _home: home,
        }
    })
}

fn at(cwd: &std::path::Path) -> ContextRequest {
    ContextRequest { cwd: cwd.to_path_buf(), date: Some("2026-11-29".into()), ..Default::default() }
}

#[divan::bench(sample_count = 20)]
fn scan_10k_topic_files() -> usize {
    let w = world();
    w.mneme.memories(&at(&w.big_memdir_repo), &MemoryListFilter::default()).expect("scan").len()
}

#[divan::bench(sample_count = 20)]
fn manifest_10k_topic_files() -> usize {
    let w = world();
    w.mneme.manifest(&at(&w.big_memdir_repo)).expect("manifest").text.len()
}

#[divan::bench(sample_count = 50)]
fn context_30_level_chain() -> usize {
    let w = world();
    w.mneme.context(&at(&w.deep_cwd)).expect("context").block.len()
}

#[divan::bench(sample_count = 20)]
fn context_2000_rules() -> usize {
    let w = world();
    w.mneme.context(&at(&w.rules_repo)).expect("context").block.len()
}

#[divan::bench(sample_count = 20)]
fn context_500_includes() -> usize {
    let w = world();
    w.mneme.context(&at(&w.includes_repo)).expect("context").block.len()
}

#[divan::bench(sample_count = 20)]
fn context_20000_unclosed_emphasis() -> usize {
    let w = world();
    w.mneme.context(&at(&w.emphasis_repo)).expect("context").block.len()
}
