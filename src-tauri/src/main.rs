//! `mneme-app [FOLDER]`: the desktop window, open on FOLDER when one is named (else on the
//! project opened last). FOLDER is also the folder relative paths start from (default: the
//! current folder, or the home folder when started from a desktop menu at `/`); one that is not
//! a folder stops the launch with the reason. While the app runs, a launch
//! hands over to it and the running window offers to open FOLDER (`launch.rs`).

fn main() -> std::process::ExitCode {
    let start_dir = std::env::args_os().nth(1).map(std::path::PathBuf::from);
    match mneme_app::run(start_dir) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mneme-app: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
