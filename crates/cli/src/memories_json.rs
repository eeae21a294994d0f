//! `mneme memories list --json`: the same bytes `serde_json::to_string_pretty` of the whole
//! list would print, made faster for folders of 10,000 memories (issue 19: the whole process
//! within a tenth of Claude Code's start-up). Each entry's JSON is written on the thread that
//! read its file, while the folder is still being read, instead of all of it afterwards on one
//! thread; the entries are then joined into stdout through one buffer, never one 4 MB string.

use anyhow::Result;
use mneme_api::{ContextRequest, MemoryListFilter, MemorySummary, Mneme};
use std::io::Write;

/// One entry as it appears inside the pretty-printed list. serde_json's pretty printer cannot
/// start one level deep, so the entry is printed as a one-element list; the `[\n` before it and
/// the `\n]` after it are cut off when writing ([`entry_text`]), and what remains is the entry
/// byte for byte as it sits in the whole list (same indent, same separators).
fn entry_json(m: &MemorySummary) -> serde_json::Result<Vec<u8>> {
    // An entry of Claude Code's usual frontmatter takes about 400 bytes; starting there spares
    // the buffer's regrowth.
    let mut out = Vec::with_capacity(512);
    serde_json::to_writer_pretty(&mut out, std::slice::from_ref(m))?;
    Ok(out)
}

fn entry_text(one_element_list: &[u8]) -> &[u8] {
    &one_element_list[2..one_element_list.len() - 2]
}

pub fn print(mneme: &Mneme, req: &ContextRequest, filter: &MemoryListFilter) -> Result<()> {
    let list = mneme.memories_with(req, filter, |m| entry_json(&m))?;
    // An entry that cannot be JSON (a path that is not UTF-8) fails the command before anything
    // is printed, as serialising the whole list did.
    if let Some(Err(e)) = list.iter().find(|entry| entry.is_err()) {
        anyhow::bail!("{e}");
    }
    let stdout = std::io::stdout();
    // Stdout flushes at every line feed; the buffer in front makes that one write per 64 KiB.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = (|| -> std::io::Result<()> {
        if list.is_empty() {
            out.write_all(b"[]\n")?;
        } else {
            out.write_all(b"[\n")?;
            for (i, entry) in list.iter().flatten().enumerate() {
                if i > 0 {
                    out.write_all(b",\n")?;
                }
                out.write_all(entry_text(entry))?;
            }
            out.write_all(b"\n]\n")?;
        }
        out.flush()
    })();
    match written {
        // `mneme memories list --json | head`: the reader has what it wanted and closed the
        // pipe. End quietly with success, as every other command does (main.rs,
        // `quiet_on_closed_stdout`, which only sees `println!`'s panics, not this writer's errors).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => return Err(crate::stdout_failed(&e)),
        Ok(()) => {}
    }
    // After a closed pipe the buffer still holds what was refused: drop it unwritten (dropping
    // the writer would try once more).
    drop(out.into_parts());
    // The process ends as soon as this returns: freeing 10,000 entries one by one (about a
    // millisecond and a half) would only delay the exit that returns all the memory at once.
    std::mem::forget(list);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::MemoryType;
    use mneme_store::memdir::Scope;

    fn entry(rel: &str, links: &[&str]) -> MemorySummary {
        MemorySummary {
            rel_path: rel.into(),
            path: format!("/m/{rel}").into(),
            name: "n \"quoted\"\nline".into(),
            description: None,
            memory_type: Some(MemoryType::User),
            scope: Scope::Private,
            modified_ms: 1,
            age_days: 2,
            links: links.iter().map(|l| l.to_string()).collect(),
            indexed: true,
            frontmatter_problem: None,
        }
    }

    /// The joined entries are exactly `to_string_pretty` of the whole list, including empty
    /// and nested lists and strings holding escaped line feeds.
    #[test]
    fn joined_entries_equal_the_whole_list_pretty_printed() {
        let list = vec![entry("a.md", &["x", "y"]), entry("b/c.md", &[]), entry("d.md", &["z"])];
        let mut joined = b"[\n".to_vec();
        for (i, m) in list.iter().enumerate() {
            if i > 0 {
                joined.extend_from_slice(b",\n");
            }
            joined.extend_from_slice(entry_text(&entry_json(m).unwrap()));
        }
        joined.extend_from_slice(b"\n]");
        assert_eq!(String::from_utf8(joined).unwrap(), serde_json::to_string_pretty(&list).unwrap());
    }
}
