//! Who is on the other end of a loopback connection.
//!
//! Every local account can connect to 127.0.0.1. The token keeps other accounts out of the
//! API, but the UI's files need none, so another user on a shared machine could hold every
//! connection place with requests it never reads (up to the write-stall limit each, again and
//! again) and keep the page out. On Linux the kernel says which account owns the connecting
//! socket (`/proc/net/tcp`, the `uid` column), so a connection from another account is
//! answered with one short refusal and closed before it takes a place. Root's connections are
//! let in: root can read the token from this process anyway.
//!
//! Elsewhere (macOS, Windows) there is no such table to read; the token and the connection
//! bounds are what guard the server there.

use std::net::SocketAddr;

/// What to do with a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// This account, root, or a system where the owner cannot be told.
    Welcome,
    /// A socket another account owns.
    Foreign { uid: u32 },
}

/// The account owning the socket at `peer` connected to this server's `local` address.
#[cfg(target_os = "linux")]
pub(crate) fn classify(peer: SocketAddr, local: SocketAddr) -> Peer {
    let me = rustix::process::geteuid().as_raw();
    let table = match peer {
        SocketAddr::V4(_) => "/proc/net/tcp",
        SocketAddr::V6(_) => "/proc/net/tcp6",
    };
    match owner_in(table, peer, local) {
        Ok(Some(uid)) if uid == me || uid == 0 => Peer::Welcome,
        Ok(Some(uid)) => Peer::Foreign { uid },
        // The client closed its socket already: nothing it sent will be answered anyway.
        Ok(None) => Peer::Foreign { uid: u32::MAX },
        // No procfs (a minimal container): the owner cannot be told; the token still guards.
        Err(_) => Peer::Welcome,
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn classify(_peer: SocketAddr, _local: SocketAddr) -> Peer {
    Peer::Welcome
}

/// The `uid` of the row of `table` whose local end is `peer` and remote end `local`. Read
/// line by line and stopped at the match: the table can be long on a busy machine.
#[cfg(target_os = "linux")]
fn owner_in(table: &str, peer: SocketAddr, local: SocketAddr) -> std::io::Result<Option<u32>> {
    use std::io::BufRead;
    let (want_local, want_remote) = (proc_address(peer), proc_address(local));
    let file = std::io::BufReader::new(std::fs::File::open(table)?);
    for line in file.lines().skip(1) {
        let line = line?;
        if let Some(uid) = row_owner(&line, &want_local, &want_remote) {
            return Ok(Some(uid));
        }
    }
    Ok(None)
}

/// One row of `/proc/net/tcp{,6}`: `sl local rem st tx:rx tr:when retrnsmt uid …`.
fn row_owner(line: &str, want_local: &str, want_remote: &str) -> Option<u32> {
    let mut fields = line.split_whitespace();
    let _slot = fields.next()?;
    let (local, remote) = (fields.next()?, fields.next()?);
    if !local.eq_ignore_ascii_case(want_local) || !remote.eq_ignore_ascii_case(want_remote) {
        return None;
    }
    fields.nth(4)?.parse().ok()
}

/// An address as the kernel prints it there: each 32-bit word of the address in the
/// machine's byte order as hex, then the port in hex.
fn proc_address(addr: SocketAddr) -> String {
    let words: Vec<u32> = match addr {
        SocketAddr::V4(a) => vec![u32::from_ne_bytes(a.ip().octets())],
        SocketAddr::V6(a) => a.ip().octets().chunks_exact(4).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]])).collect(),
    };
    let mut out: String = words.iter().map(|w| format!("{w:08X}")).collect();
    out.push_str(&format!(":{:04X}", addr.port()));
    out
}

/// What a refused connection is told, in one write that fits the socket's buffer: the
/// account that started this server is the only one it answers.
pub(crate) fn refusal(uid: u32) -> Vec<u8> {
    let me = own_uid();
    let from = match uid {
        u32::MAX => "a connection that closed before its account could be read".to_string(),
        uid => format!("account uid {uid}"),
    };
    let body = format!(
        "This Mneme server answers only programs run by the account that started it (uid {me}); this request came from {from}. Start your own with `mneme serve`.\n"
    );
    format!("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes()
}

#[cfg(target_os = "linux")]
fn own_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

#[cfg(not(target_os = "linux"))]
fn own_uid() -> u32 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_written_as_the_kernel_prints_them() {
        // As /proc/net/tcp shows 127.0.0.1:8080 and [::1]:80 on a little-endian machine.
        if cfg!(target_endian = "little") {
            assert_eq!(proc_address("127.0.0.1:8080".parse().unwrap()), "0100007F:1F90");
            assert_eq!(proc_address("[::1]:80".parse().unwrap()), "00000000000000000000000001000000:0050");
        }
    }

    #[test]
    fn a_row_gives_its_owner_only_for_the_right_pair_of_ends() {
        let row = "   3: 0100007F:D2F0 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 123456 1 0000000000000000 20 4 30 10 -1";
        assert_eq!(row_owner(row, "0100007F:D2F0", "0100007F:1F90"), Some(1000));
        assert_eq!(row_owner(row, "0100007f:d2f0", "0100007f:1f90"), Some(1000), "hex in either case");
        // The server's own end of the same connection is the reverse pair.
        assert_eq!(row_owner(row, "0100007F:1F90", "0100007F:D2F0"), None);
        assert_eq!(row_owner("  sl  local_address rem_address", "0100007F:D2F0", "0100007F:1F90"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_of_this_account_is_welcome() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server_side, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(classify(peer, server_side.local_addr().unwrap()), Peer::Welcome);
        // A peer address no socket has: not found, so not let in.
        let gone: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(matches!(classify(gone, server_side.local_addr().unwrap()), Peer::Foreign { .. }));
    }
}
