//! Hostile model answers for the selector (`parse_answer`, `selected_names`): fenced, truncated,
//! deeply nested, huge, not JSON at all. An answer is a value or an error that says what was
//! wrong; never a panic.

use mneme_recall::{parse_answer, selected_names, strip_code_fence, Dialect};
use mneme_testsupport::hostile::{config, deep, mutated_text, text};
use proptest::prelude::*;

fn answers() -> Vec<Vec<u8>> {
    [
        r#"{"selected_memories": ["a.md", "b.md"]}"#,
        "```json\n{\"selected_memories\": [\"user_role.md\"]}\n```",
        r#"{"selected_memories": []}"#,
        r#"{"selected_memories": "a.md"}"#,
        "I picked these: a.md",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn check(answer: &str) -> Result<(), TestCaseError> {
    for dialect in [Dialect::ClaudeCode2_1_197, Dialect::ClaudeCode2_1_88] {
        match parse_answer(answer, dialect) {
            Ok(v) => match selected_names(&v, |n| n.ends_with(".md")) {
                Ok(names) => prop_assert!(names.iter().all(|n| n.ends_with(".md"))),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            },
            Err(e) => prop_assert!(e.to_string().len() > "the model's answer is not JSON".len()),
        }
    }
    let stripped = strip_code_fence(answer);
    prop_assert!(stripped.len() <= answer.len());
    Ok(())
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn damaged_answers(answer in mutated_text(answers())) {
        check(&answer)?;
    }

    #[test]
    fn arbitrary_answers(answer in text()) {
        check(&answer)?;
        check(&format!("```{answer}```"))?;
    }

    /// 12,000 `[` or `{`: serde_json refuses past 128 levels with an error.
    #[test]
    fn deeply_nested_answers(answer in deep()) {
        check(&answer)?;
        check(&format!("{{\"selected_memories\": {answer}"))?;
    }
}
