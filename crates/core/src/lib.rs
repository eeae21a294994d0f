//! Mneme's vocabulary, shared by every other crate: the CLAUDE.md layers, the four memory
//! types, the frontmatter parser, and Claude Code's text rules (UTF-16 lengths, the MEMORY.md
//! truncation, the project-folder sanitizer). Nothing here touches the disk or the clock, so
//! every rule can be tested as a pure function.

pub mod clock;
pub mod frontmatter;
pub mod js_json;
pub mod js_yaml;
pub mod layer;
pub mod memory_type;
pub mod own_files;
pub mod platform;
pub mod portable;
pub mod process;
pub mod retry;
pub mod sanitize;
pub mod scoped;
pub mod text;
pub mod versions;

pub use clock::{Clock, FixedClock, SystemClock};
pub use frontmatter::{Frontmatter, FrontmatterError};
pub use layer::Layer;
pub use memory_type::MemoryType;
pub use versions::{ClaudeVersion, Fidelity, Profile};
