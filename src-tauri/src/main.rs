//! `mneme-app [FOLDER]`: the desktop window. FOLDER is where "What Claude sees" starts (default:
//! the current folder, or the home folder when started from a desktop menu at `/`).

fn main() -> std::process::ExitCode {
    // Read before any thread starts: the `time` crate can only read the local offset soundly
    // while the process is single-threaded (the CLI does the same).
    let utc_offset = time::UtcOffset::current_local_offset().map(|o| o.whole_seconds()).unwrap_or(0);
    let start_dir = std::env::args_os().nth(1).map(std::path::PathBuf::from);
    match mneme_app::run(utc_offset, start_dir) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mneme-app: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
