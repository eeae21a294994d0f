//! Claude Code's transcripts, background memory extraction, session memory and the review inbox.

pub mod prompt;
pub mod rules;
pub mod transcript;
