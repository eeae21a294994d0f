//! The form a text file was written in on another system, kept through a save.
//!
//! CLAUDE.md files, rules and memory folders reach a Linux or macOS machine from Windows
//! checkouts (CRLF line ends, `core.autocrlf`, a UTF-8 byte-order mark), from classic Mac
//! editors (a lone CR), and from editors that save Windows-1252 or UTF-16. An editor in a web
//! page hands back text with LF line ends whatever the file had (a `<textarea>` normalises
//! them), so a save that wrote that text as it came would turn a one-line change into a diff of
//! every line in the user's git. [`keep_form`] puts the file's own line ends and byte-order
//! mark back; [`NotUtf8`] says why a file that is not UTF-8 cannot be edited as text at all
//! (reading it replaced what it could not decode, and saving that would lose it for good).

use std::borrow::Cow;
use std::fmt;

const BOM: char = '\u{feff}';

/// `new` in the form of `old`: `old`'s byte-order mark, and its line ends.
///
/// When `old` has CRs in its line ends, every line end of `new` is replaced: lines that `new`
/// keeps from `old` (matched by a line diff on their text) get the line end they had, so a file
/// with mixed line ends changes only where it was edited; new lines get the line end `old`
/// uses most. What line ends `new` itself came with does not count: a text box hands back LF,
/// and an editor that rebuilds a frontmatter from the file's text keeps CRLF there while the
/// body typed in a text box is LF. A file with only LF line ends is written as `new` is. The
/// byte-order mark is put back when `new` lacks it: it shows in no editor, so a save that
/// drops it was never what the person saving meant.
pub fn keep_form<'a>(old: &str, new: &'a str) -> Cow<'a, str> {
    let old_bom = old.starts_with(BOM);
    let old = old.strip_prefix(BOM).unwrap_or(old);
    if !old.contains('\r') {
        return if old_bom && !new.starts_with(BOM) { Cow::Owned(format!("{BOM}{new}")) } else { Cow::Borrowed(new) };
    }
    let body = new.strip_prefix(BOM).unwrap_or(new);
    let old_lines = split_lines(old);
    let new_lines = split_lines(body);
    let usual = most_used_end(&old_lines);
    let old_texts: Vec<&str> = old_lines.iter().map(|(t, _)| *t).collect();
    let new_texts: Vec<&str> = new_lines.iter().map(|(t, _)| *t).collect();
    let mut ends: Vec<&str> = vec![usual; new_lines.len()];
    // A whole rewrite of a large file would make the diff quadratic; past the deadline it
    // matches less, and the lines it did not match take the usual line end.
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_millis(500))
        .diff_slices(&old_texts, &new_texts);
    for op in diff.ops() {
        if let similar::DiffOp::Equal { old_index, new_index, len } = *op {
            for k in 0..len {
                let end = old_lines[old_index + k].1;
                // A kept line that had no line end (the old last line) and now has one gets
                // the usual one.
                if !end.is_empty() {
                    ends[new_index + k] = end;
                }
            }
        }
    }
    let mut out = String::with_capacity(new.len() + new_lines.len() + 3);
    if old_bom || new.starts_with(BOM) {
        out.push(BOM);
    }
    for (i, (text, end)) in new_lines.iter().enumerate() {
        out.push_str(text);
        if !end.is_empty() {
            out.push_str(ends[i]);
        }
    }
    Cow::Owned(out)
}

/// Lines with their ends ("\r\n", "\n", "\r", or "" for a last line without one).
fn split_lines(s: &str) -> Vec<(&str, &'static str)> {
    let b = s.as_bytes();
    let (mut out, mut start, mut i) = (Vec::new(), 0, 0);
    while i < b.len() {
        match b[i] {
            b'\n' => {
                out.push((&s[start..i], "\n"));
                start = i + 1;
            }
            b'\r' if b.get(i + 1) == Some(&b'\n') => {
                out.push((&s[start..i], "\r\n"));
                i += 1;
                start = i + 1;
            }
            b'\r' => {
                out.push((&s[start..i], "\r"));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < s.len() {
        out.push((&s[start..], ""));
    }
    out
}

/// The line end most lines of a file have (the first seen of equals; LF for none).
fn most_used_end(lines: &[(&str, &'static str)]) -> &'static str {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for (_, end) in lines.iter().filter(|(_, e)| !e.is_empty()) {
        match counts.iter_mut().find(|(e, _)| e == end) {
            Some((_, n)) => *n += 1,
            None => counts.push((end, 1)),
        }
    }
    // `max_by_key` keeps the last of equals; reversed, that is the first seen.
    counts.iter().rev().max_by_key(|(_, n)| *n).map_or("\n", |(e, _)| e)
}

/// A message whose fix is a command, as a screen lays it out: the prose before the command,
/// the command on a line of its own to copy, the prose after it. Each part is whole sentences,
/// so neither reads as the broken-off half of one. The message itself (for a terminal, where
/// the command inside the sentence is right) stays as it is beside this.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct CommandFix {
    /// The message up to the command, ending in a colon (what is wrong, and "run this").
    pub before: String,
    /// The command, with `FILE` standing for the file: a screen that knows which file puts it
    /// in.
    pub line: String,
    /// What to do once the command ran, and any other way to mend it.
    pub after: String,
}

/// Why a file's bytes are not UTF-8 text, for a message that says what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotUtf8 {
    /// UTF-16 text: a UTF-16 byte-order mark, or the NUL bytes of ASCII in UTF-16.
    Utf16,
    /// A byte that cannot start or continue a UTF-8 character, as an 8-bit Windows or ISO
    /// encoding (Windows-1252, Latin-1) writes accented letters and typographic quotes.
    Byte {
        /// The byte.
        byte: u8,
        /// Its line, from 1.
        line: usize,
    },
    /// The file ends in the middle of a UTF-8 character (cut short).
    Truncated,
}

impl NotUtf8 {
    /// What is wrong with `bytes` as UTF-8, or `None` when they are UTF-8.
    pub fn of(bytes: &[u8]) -> Option<NotUtf8> {
        let err = std::str::from_utf8(bytes).err()?;
        let nuls = bytes.iter().take(4096).filter(|b| **b == 0).count();
        if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) || nuls * 4 >= bytes.len().min(4096) {
            return Some(NotUtf8::Utf16);
        }
        let at = err.valid_up_to();
        match err.error_len() {
            None => Some(NotUtf8::Truncated),
            Some(_) => Some(NotUtf8::Byte { byte: bytes[at], line: 1 + bytes[..at].iter().filter(|b| **b == b'\n').count() }),
        }
    }
}

impl NotUtf8 {
    /// The shell command that converts the file to UTF-8, with `FILE` standing for the file (a
    /// screen that knows which file puts it in, and offers the command to copy), or `None` when
    /// no command can mend it (a file cut short needs a person to look at its end).
    pub fn command(&self) -> Option<&'static str> {
        match self {
            NotUtf8::Utf16 => Some("iconv -f UTF-16 -t UTF-8 FILE > FILE.new"),
            NotUtf8::Byte { .. } => Some("iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new"),
            NotUtf8::Truncated => None,
        }
    }

    /// The problem and the fix as a screen shows them, with the command on a line of its
    /// own: `opening` is the message's start up to the problem ("Mneme will not save a.md
    /// because it is not UTF-8 text: "), `then` what to do once the file is mended, as in
    /// [`NotUtf8::then`]. The prose around the command is whole sentences, where the message
    /// for a terminal has the command inside one. `None` when no command mends it.
    pub fn fix(&self, opening: &str, then: &str) -> Option<CommandFix> {
        let line = self.command()?;
        let problem = match self {
            NotUtf8::Utf16 => "it is UTF-16 text.".to_string(),
            NotUtf8::Byte { byte, line } => {
                format!("byte 0x{byte:02X} on line {line} is not UTF-8, so the file was probably saved as Windows-1252 or Latin-1.")
            }
            NotUtf8::Truncated => return None,
        };
        Some(CommandFix {
            before: format!("{opening}{problem} To convert it to UTF-8, run this in a terminal:"),
            line: line.to_string(),
            after: format!(
                "Then move FILE.new over FILE and {then}. Or, instead of the command, save it in your editor with \"Save with encoding: UTF-8\"."
            ),
        })
    }

    /// The problem and the fix, ending in `then`, what to do once the file is mended ("open
    /// it again" when it is shown, "run the dream again" when a dream refused it).
    pub fn then(&self, then: &str) -> String {
        match self {
            NotUtf8::Utf16 => format!(
                "it is UTF-16 text. Convert it to UTF-8 (for example `{}`, then move FILE.new over FILE, or \"Save with encoding: UTF-8\" in your editor) and {then}",
                self.command().unwrap_or_default()
            ),
            NotUtf8::Byte { byte, line } => format!(
                "byte 0x{byte:02X} on line {line} is not UTF-8, so the file was probably saved as Windows-1252 or Latin-1. Convert it to UTF-8 (for example `{}`, then move FILE.new over FILE, or \"Save with encoding: UTF-8\" in your editor) and {then}",
                self.command().unwrap_or_default()
            ),
            NotUtf8::Truncated => format!(
                "it ends in the middle of a UTF-8 character, so it was probably cut short. Check the end of the file in another editor, fix or remove its last character, and {then}"
            ),
        }
    }
}

/// The problem and the fix, as the end of a sentence naming the file: "… is not UTF-8: …".
impl fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.then("open it again"))
    }
}

/// A file name as text for people: its UTF-8 as it is, each byte that is not UTF-8 as `\xNN`
/// (a name from a Latin-1 system, `caf\xE9.md`), so a name Linux allows but no UTF-8 text can
/// spell still shows which file it is, where a replacement character would hide the byte.
pub fn escaped_name(name: &std::ffi::OsStr) -> String {
    let mut out = String::new();
    for chunk in name.as_encoded_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a `<textarea>` hands back: the file's text with every line end made LF.
    fn as_textarea(s: &str) -> String {
        s.replace("\r\n", "\n").replace('\r', "\n")
    }

    #[test]
    fn a_one_line_edit_of_a_crlf_file_changes_only_that_line() {
        let old = "# Title\r\n\r\nfirst\r\nsecond\r\nthird\r\n";
        let edited = as_textarea(old).replace("second", "SECOND");
        assert_eq!(keep_form(old, &edited), "# Title\r\n\r\nfirst\r\nSECOND\r\nthird\r\n");
        let added = as_textarea(old) + "fourth\n";
        assert_eq!(keep_form(old, &added), "# Title\r\n\r\nfirst\r\nsecond\r\nthird\r\nfourth\r\n");
        // No line end at the end stays so.
        assert_eq!(keep_form("a\r\nb", "a\nb\nc"), "a\r\nb\r\nc");
    }

    #[test]
    fn mixed_and_lone_cr_line_ends_are_kept_line_by_line() {
        let old = "a\r\nb\nc\rd\r\ne\n";
        let edited = as_textarea(old).replace("c\n", "c\nnew\n");
        // `new` takes the most used line end (CRLF, twice); every kept line its own.
        assert_eq!(keep_form(old, &edited), "a\r\nb\nc\rnew\r\nd\r\ne\n");
        let mac = "one\rtwo\rthree\r";
        assert_eq!(keep_form(mac, &as_textarea(mac).replace("two", "2")), "one\r2\rthree\r");
    }

    /// A large CRLF file rewritten whole (no line kept) still comes back in CRLF, and the
    /// diff behind it is bounded (without its deadline this one is quadratic: minutes).
    #[test]
    fn a_whole_rewrite_of_a_large_file_takes_its_line_ends() {
        let old: String = (0..30_000).map(|i| format!("old line {i}\r\n")).collect();
        let new: String = (0..30_000).map(|i| format!("new line {i}\n")).collect();
        assert_eq!(keep_form(&old, &new), new.replace('\n', "\r\n"));
    }

    #[test]
    fn the_byte_order_mark_stays_at_the_start() {
        let old = "\u{feff}---\r\nname: x\r\n---\r\nbody\r\n";
        let dropped = as_textarea(old).replace('\u{feff}', "").replace("body", "BODY");
        assert_eq!(keep_form(old, &dropped), "\u{feff}---\r\nname: x\r\n---\r\nBODY\r\n");
        assert_eq!(keep_form(old, &as_textarea(old)), old, "the mark kept by the editor is not doubled");
        assert_eq!(keep_form("\u{feff}lf\n", "lf 2\n"), "\u{feff}lf 2\n");
    }

    #[test]
    fn lf_files_are_written_as_given_and_mixed_text_takes_the_files_line_ends() {
        assert!(matches!(keep_form("a\nb\n", "a\nc\n"), Cow::Borrowed("a\nc\n")));
        assert_eq!(keep_form("", "new\n"), "new\n");
        // A frontmatter rebuilt from the CRLF file, a body typed in a text box.
        let old = "---\r\nname: a\r\n---\r\nbody\r\nmore\r\n";
        assert_eq!(keep_form(old, "---\r\nname: b\r\n---\r\nbody\nMORE\n"), "---\r\nname: b\r\n---\r\nbody\r\nMORE\r\n");
    }

    #[test]
    fn names_that_are_not_utf8_show_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(escaped_name(std::ffi::OsStr::from_bytes(b"caf\xe9-notes.md")), "caf\\xE9-notes.md");
        assert_eq!(escaped_name(std::ffi::OsStr::from_bytes("d\u{e9}j\u{e0}.md".as_bytes())), "d\u{e9}j\u{e0}.md");
    }

    #[test]
    fn not_utf8_says_which_encoding_it_looks_like() {
        assert_eq!(NotUtf8::of("café\n".as_bytes()), None);
        assert_eq!(NotUtf8::of(b"line\ncaf\xe9\n"), Some(NotUtf8::Byte { byte: 0xe9, line: 2 }));
        let utf16: Vec<u8> = "UTF16\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(NotUtf8::of(&[&[0xff, 0xfe][..], &utf16].concat()), Some(NotUtf8::Utf16));
        assert_eq!(NotUtf8::of(&[&utf16[..], &[0xd8, 0x3d]].concat()), Some(NotUtf8::Utf16), "no mark, but the NULs of ASCII");
        assert_eq!(NotUtf8::of(b"caf\xc3"), Some(NotUtf8::Truncated));
        let said = NotUtf8::Byte { byte: 0x93, line: 3 }.to_string();
        assert!(said.starts_with("byte 0x93 on line 3 is not UTF-8") && said.contains("iconv -f WINDOWS-1252 -t UTF-8"), "{said}");
    }

    /// The prose around the command is two whole sentences, not one cut in two at the command
    /// (the screen once showed a line starting ", then move FILE.new over FILE").
    #[test]
    fn the_fix_around_the_command_is_whole_sentences() {
        let fix = NotUtf8::Byte { byte: 0x93, line: 3 }.fix("Mneme will not save a.md because it is not UTF-8 text: ", "open it again").unwrap();
        assert_eq!(fix.before, "Mneme will not save a.md because it is not UTF-8 text: byte 0x93 on line 3 is not UTF-8, so the file was probably saved as Windows-1252 or Latin-1. To convert it to UTF-8, run this in a terminal:");
        assert_eq!(fix.line, "iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new");
        assert_eq!(fix.after, "Then move FILE.new over FILE and open it again. Or, instead of the command, save it in your editor with \"Save with encoding: UTF-8\".");
        let wide = NotUtf8::Utf16.fix("x: ", "run the dream again").unwrap();
        assert_eq!((wide.before.as_str(), wide.line.as_str()), ("x: it is UTF-16 text. To convert it to UTF-8, run this in a terminal:", "iconv -f UTF-16 -t UTF-8 FILE > FILE.new"));
        assert!(wide.after.starts_with("Then move FILE.new over FILE and run the dream again."), "{}", wide.after);
        assert_eq!(NotUtf8::Truncated.fix("x: ", "open it again"), None, "no command mends a file cut short");
    }
}
