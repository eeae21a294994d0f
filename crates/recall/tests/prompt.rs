//! With the user's Claude Code installed, the selector is asked in Claude Code's own words,
//! cut from that binary at run time and cached per version in Mneme's data dir; Mneme's own
//! prompt is only the fallback. Needs `MNEME_CLAUDE_BIN` (see `scripts/claude-code.sh`);
//! skipped without it unless `MNEME_REQUIRE_CLAUDE=1`.

use mneme_recall::{selector_system_prompt, Dialect, SelectorPrompt, SELECT_MEMORIES_SYSTEM_PROMPT};
use mneme_store::Environment;
use mneme_testsupport::claude_code;

#[test]
fn the_installed_claude_codes_selector_prompt_is_used_and_cached() {
    let Some(bin) = claude_code::pinned() else { return };
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("mneme-data");
    let env = Environment::with_home(home.path())
        .set_var("PATH", bin.parent().unwrap().to_string_lossy().to_string())
        .set_var("MNEME_DATA_DIR", data.to_string_lossy().to_string());

    let (text, source) = selector_system_prompt(Dialect::ClaudeCode2_1_197, &env);
    let SelectorPrompt::ClaudeCode { version, path } = &source else { panic!("{source:?}") };
    assert_eq!(path, &std::fs::canonicalize(&bin).unwrap());
    assert!(text.starts_with("You are selecting memories"), "{text}");
    assert_ne!(text, SELECT_MEMORIES_SYSTEM_PROMPT, "Mneme's own words differ from Claude Code's");
    assert!(source.describe().starts_with(&format!("Claude Code {version}'s own selector prompt, read from ")));

    let cached = data.join("claude-code").join(version).join("selector_prompt.txt");
    assert!(std::fs::read_to_string(&cached).unwrap().starts_with(&text), "cached per version (the text, then the cache's seal)");
    // 2.1.88's single-message form has no text in a current binary: Mneme's, saying so.
    let (_, source) = selector_system_prompt(Dialect::ClaudeCode2_1_88, &env);
    assert!(matches!(source, SelectorPrompt::Mneme { .. }), "{source:?}");
}
