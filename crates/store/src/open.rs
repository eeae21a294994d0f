//! Opening a file to read it without waiting on whatever is there.
//!
//! Every file Mneme reads sits in a folder someone else can write to (Claude Code, a
//! teammate's sync, a cloned repository), so a name may hold a FIFO, and a plain `open` of a
//! FIFO waits for a writer forever: one planted `MEMORY.md` or transcript would hang the CLI
//! or stop a background loop. `O_NONBLOCK` makes that open return at once (reads of regular
//! files are unaffected), and the caller's `fstat` then refuses what is not a plain file.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens `path` (following links) for reading without waiting for a FIFO's writer.
pub fn open_no_wait(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32).open(path)
}

/// [`open_no_wait`] without following a final symbolic link: a link at `path` fails with the
/// system's `ELOOP` ([`is_a_link`] tells it) instead of opening its target. For reads that
/// must get the file a type check just looked at, not whatever a link swapped in since points to.
pub fn open_no_wait_no_follow(path: &Path) -> io::Result<File> {
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
    OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)
}

/// Whether an [`open_no_wait_no_follow`] failed because a symbolic link is at the name.
pub fn is_a_link(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

/// How much to reserve for reading a file that says it is `len` bytes long: the size a
/// sparse or growing file reports is not a promise, so a huge one is not reserved up front
/// (an allocation of a terabyte aborts the process); reading grows the buffer as needed.
pub fn capacity_for(len: u64) -> usize {
    const MAX_UP_FRONT: u64 = 64 << 20;
    len.min(MAX_UP_FRONT) as usize
}

/// The whole of a plain file, opened without waiting on a FIFO: a folder, pipe, socket or
/// device under the name (a cloned repository's `settings.json` linked to `/dev/zero`, a FIFO
/// planted beside memories) is refused with [`io::ErrorKind::InvalidInput`] instead of being
/// read forever. A missing file is [`io::ErrorKind::NotFound`], as `fs::read` gives it.
pub fn read_plain(path: &Path) -> io::Result<(Vec<u8>, std::fs::Metadata)> {
    read_plain_capped(path, u64::MAX)
}

/// [`read_plain`] for at most `cap` bytes: a file larger than that, by its size or by what it
/// grew to while being read, is [`io::ErrorKind::FileTooLarge`], and no more than one byte past
/// the cap is ever read.
pub fn read_plain_capped(path: &Path, cap: u64) -> io::Result<(Vec<u8>, std::fs::Metadata)> {
    use std::io::Read;
    let file = open_no_wait(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_plain());
    }
    if meta.len() > cap {
        return Err(too_large(cap));
    }
    let mut bytes = Vec::with_capacity(capacity_for(meta.len()));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok((bytes, meta))
}

fn too_large(cap: u64) -> io::Error {
    io::Error::new(io::ErrorKind::FileTooLarge, format!("larger than {cap} bytes"))
}

/// [`read_plain`] as text, invalid UTF-8 refused as `fs::read_to_string` refuses it.
pub fn read_plain_to_string(path: &Path) -> io::Result<String> {
    let (bytes, _) = read_plain(path)?;
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// What stands at a name instead of a plain file, in words for a message: "a folder",
/// "a named pipe (FIFO)", "a socket", "a device" (or "not a plain file" for anything else).
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "a plain file"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a plain file"
    }
}

/// One of Mneme's own files (its settings, records and state, which a person or another
/// program can replace), read whole: a plain file only, opened without waiting on a FIFO, and
/// at most `cap` bytes. `Ok(None)` when nothing is there. Every refusal names `path`, says what
/// is there, and what to do, so callers can pass it on as it is:
/// - a folder, named pipe, socket or device: [`io::ErrorKind::InvalidInput`], "… is a named
///   pipe (FIFO), not a plain file, so Mneme cannot read it; move it aside or delete it";
/// - over `cap`: [`io::ErrorKind::FileTooLarge`], "… is larger than 1 MiB …; move it aside or
///   delete it".
pub fn read_own_file(path: &Path, cap: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match open_no_wait(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(own_file_not_plain(path, kind_of(&meta)));
    }
    if meta.len() > cap {
        return Err(own_file_too_large(path, cap));
    }
    let mut bytes = Vec::with_capacity(capacity_for(meta.len()));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(own_file_too_large(path, cap));
    }
    Ok(Some(bytes))
}

/// The [`read_own_file`] refusal of a name holding `what` (a folder, a named pipe, …).
pub fn own_file_not_plain(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} is {what}, not a plain file, so Mneme cannot read it; move it aside or delete it", path.display()),
    )
}

fn own_file_too_large(path: &Path, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("{} is larger than {}, more than this file ever holds, so Mneme does not read it; move it aside or delete it", path.display(), size_words(cap)),
    )
}

/// `cap` bytes for a message: "16 MiB", "64 KiB", "100 bytes".
pub fn size_words(cap: u64) -> String {
    if cap >= 1 << 20 && cap.is_multiple_of(1 << 20) {
        format!("{} MiB", cap >> 20)
    } else if cap >= 1 << 10 && cap.is_multiple_of(1 << 10) {
        format!("{} KiB", cap >> 10)
    } else {
        format!("{cap} bytes")
    }
}

/// The error for a name that holds a folder, pipe, socket or device instead of a plain file.
pub fn not_plain() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a plain file (a folder, pipe, socket or device)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_opens_at_once_and_reads_as_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("MEMORY.md");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let f = open_no_wait(&fifo).expect("opened without a writer");
        assert!(!f.metadata().unwrap().is_file());
        assert_eq!(capacity_for(1 << 40), 64 << 20);
        assert_eq!(capacity_for(10), 10);
        let err = read_plain(&fifo).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert_eq!(read_plain_to_string(&link).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert_eq!(read_plain(&dir.path().join("none")).unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::write(dir.path().join("a.json"), "{}").unwrap();
        assert_eq!(read_plain_to_string(&dir.path().join("a.json")).unwrap(), "{}");
        std::fs::write(dir.path().join("b.md"), "12345").unwrap();
        assert_eq!(read_plain_capped(&dir.path().join("b.md"), 5).unwrap().0, b"12345");
        let err = read_plain_capped(&dir.path().join("b.md"), 4).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{err}");
    }

    #[test]
    fn own_files_are_read_plain_and_bounded_with_errors_that_say_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("modes.json");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let err = read_own_file(&fifo, 1 << 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let text = err.to_string();
        assert!(text.contains("modes.json is a named pipe (FIFO)") && text.contains("move it aside or delete it"), "{text}");
        let folder = dir.path().join("providers.json");
        std::fs::create_dir(&folder).unwrap();
        let text = read_own_file(&folder, 1 << 20).unwrap_err().to_string();
        assert!(text.contains("providers.json is a folder, not a plain file"), "{text}");
        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b' '; 2048]).unwrap();
        let err = read_own_file(&big, 1 << 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("big.json is larger than 1 KiB"), "{err}");
        assert_eq!(read_own_file(&big, 2048).unwrap().unwrap().len(), 2048);
        assert_eq!(read_own_file(&dir.path().join("none.json"), 10).unwrap(), None);
        assert_eq!(size_words(16 << 20), "16 MiB");
        assert_eq!(size_words(100), "100 bytes");
    }
}
