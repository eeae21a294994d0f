//! The selector's system prompt is byte for byte the one in Claude Code 2.1.197.
//!
//! `tests/data/select_memories_system_prompt_2.1.197.txt` was cut from the installed binary:
//! the template literal assigned right after `var zPl=E(()=>{…RLf=` — the text from
//! `You are selecting memories` up to `${kLf}` (an empty string in this build) plus the newline
//! that closes the literal. Find it with
//! `grep -a -o 'You are selecting memories.\{0,80\}' claude`.

#[test]
fn the_system_prompt_matches_the_binary() {
    let golden = include_str!("data/select_memories_system_prompt_2.1.197.txt");
    assert_eq!(mneme_recall::SELECT_MEMORIES_SYSTEM_PROMPT, golden);
}
