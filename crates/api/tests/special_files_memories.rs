//! A memory name that holds a FIFO, socket or folder instead of a plain file: asking for it
//! answered "No memory called 'fifo.md'", though `ls` shows it there. The scan saw it and said
//! what it is; asking for it now gives that. Each call runs on a thread and must come back
//! within 25 s, so a hang is a failure rather than a test that never ends.

use mneme_api::{ContextRequest, ErrorCode, FixedClock, Mneme};
use mneme_testsupport::{write_file, TestHome};
use std::fs;
use std::sync::Arc;
use mneme_testsupport::special_files::{mkfifo, within};

#[test]
fn asking_for_a_fifo_named_like_a_memory_says_what_it_is() {
    let t = TestHome::new();
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    write_file(&mem.join("plain.md"), "---\nname: plain\ndescription: d\n---\nbody\n");
    mkfifo(&mem.join("fifo.md"));
    let _socket = std::os::unix::net::UnixListener::bind(mem.join("sock.md")).unwrap();
    let req = ContextRequest { cwd: project, ..Default::default() };
    let m = Arc::new(Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000))));

    for key in ["fifo.md", "fifo"] {
        let (m, r) = (Arc::clone(&m), req.clone());
        let err = within("the memory", move || m.memory(&r, key).map(|_| ())).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput, "{key}: {}", err.message);
        assert!(!err.message.contains("No memory called"), "{key}: {}", err.message);
        assert!(
            err.message.contains("fifo.md: This is a named pipe (FIFO), not a plain file") && err.message.contains("Move it aside or delete it"),
            "{key}: {}",
            err.message
        );
    }
    let (m2, r) = (Arc::clone(&m), req.clone());
    let err = within("the memory", move || m2.memory(&r, "sock.md").map(|_| ())).unwrap_err();
    assert!(err.message.contains("sock.md: This is a socket, not a plain file"), "{}", err.message);

    // A name with nothing there is still not found, and a plain memory is still read.
    let err = m.memory(&req, "nothing.md").unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("No memory called 'nothing.md'"), "{}", err.message);
    // Shown on a screen too: it names the list, not a command.
    assert!(err.message.ends_with("now: it may have been deleted, renamed or moved. The list of memories shows the ones there are.") && !err.message.contains("mneme memories"), "{}", err.message);
    assert!(m.memory(&req, "plain").unwrap().content.contains("body"));
}
