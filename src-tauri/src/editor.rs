//! Opening a file in the person's editor, picked as Claude Code picks it
//! (`getExternalEditor`): `$VISUAL`, then `$EDITOR` (trimmed), else the first of `code`, `vi`,
//! `nano` on the PATH. `code` runs as `code -w` and `subl` as `subl --wait`, and the editor
//! command is run through the shell as `<editor> "<path>"`. A GUI editor is waited on until
//! it closes; a terminal editor (vi, nano, …) gets a terminal window (`$TERMINAL`,
//! `x-terminal-emulator`, `xterm`), since a desktop app has none. And revealing a file's
//! folder in the file manager.

use crate::commands::Answer;
use mneme_api::{ApiError, Environment, ErrorCode, Mneme};
use mneme_core::platform::Os;
use serde::Serialize;
use specta::Type;
use std::path::{Path, PathBuf};
use tauri::State;

/// Claude Code's list of GUI editors (they keep its TUI on the main screen).
const GUI_EDITORS: &[&str] = &["code", "cursor", "windsurf", "codium", "subl", "atom", "gedit", "notepad++", "notepad"];

/// How an editor ran.
#[derive(Debug, Clone, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct EditorRun {
    /// The editor command, as chosen (`code -w`, `$VISUAL`'s value, …).
    pub editor: String,
    /// Which variable chose it: `VISUAL`, `EDITOR`, or absent when found on the PATH.
    pub from: Option<String>,
    /// Whether the app waited for the editor to close (false: a terminal window was opened
    /// and may still be editing).
    pub waited: bool,
}

/// The program and arguments that open `path`, and what they report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: String,
    pub args: Vec<String>,
    pub editor: String,
    pub from: Option<String>,
    pub gui: bool,
}

/// Decides how to open `path` on this system, as Claude Code would choose the editor.
pub fn plan(env: &Environment, path: &Path) -> Result<Launch, ApiError> {
    plan_for(Os::current(), env, path, &|program| on_path(env, program))
}

/// How `os` opens `path`. The editor is chosen the same way everywhere; how it is started
/// differs: on Linux and macOS the command runs through `sh` as shell text (`code -w`,
/// `emacsclient -c`); on Windows, where `cmd` re-parses quotes its own way, it is split into a
/// program and its arguments (a quoted program path may hold spaces). A terminal editor gets a
/// terminal window: `$TERMINAL`/`x-terminal-emulator`/`xterm` on Linux, Terminal.app on macOS
/// (through `osascript`; not waited on), a console window (`start /wait`) on Windows.
/// `found(program)` says whether a program is on the PATH: the one OS call, passed in so every
/// system's plan is tested on any machine.
pub fn plan_for(os: Os, env: &Environment, path: &Path, found: &dyn Fn(&str) -> bool) -> Result<Launch, ApiError> {
    let (editor, from) = choose_editor(env, found).ok_or_else(|| {
        ApiError::not_found(
            "No editor found: set $VISUAL or $EDITOR (for example `code -w`), or install code, vi or nano.",
        )
    })?;
    let editor = match editor.as_str() {
        "code" => "code -w".to_string(),
        "subl" => "subl --wait".to_string(),
        _ => editor,
    };
    let file = path.to_string_lossy().into_owned();
    let gui = is_gui(os, &editor);
    match os {
        Os::Linux | Os::MacOs => {
            // `$1` keeps the path one argument whatever it contains; the editor command itself
            // is shell text on purpose, as Claude Code runs it.
            let script = format!("{editor} \"$1\"");
            let mut args = vec!["-c".to_string(), script, "mneme-editor".to_string(), file.clone()];
            if gui {
                return Ok(Launch { program: "sh".into(), args, editor, from, gui });
            }
            if os == Os::MacOs {
                // Terminal's `do script` types the command into the user's login shell as
                // keystrokes: a control character in a name (^U erases the line typed so far)
                // or a backslash (fish reads `\'` inside single quotes as a quote) would let a
                // cloned repository's folder name run a command. Such a path is refused.
                if let Some(c) = file.chars().find(|c| c.is_control() || *c == '\\') {
                    return Err(ApiError::invalid(format!(
                        "The path {} holds {}, which the shell in Terminal could read as a command, so {editor} is not \
                         started there. Set $VISUAL to a desktop editor (for example `code -w`), or open the file from \
                         your editor.",
                        mneme_core::text::terminal_safe(&file),
                        if c == '\\' { "a backslash".to_string() } else { format!("the control character U+{:04X}", c as u32) }
                    )));
                }
                let command = format!("{editor} {}", sh_quote(&file));
                let script = format!("tell application \"Terminal\" to do script \"{}\"", applescript_escape(&command));
                return Ok(Launch { program: "osascript".into(), args: vec!["-e".into(), script], editor, from, gui });
            }
            let terminal = env
                .var("TERMINAL")
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .or_else(|| ["x-terminal-emulator", "xterm"].into_iter().find(|t| found(t)).map(str::to_string))
                .ok_or_else(|| {
                    ApiError::not_found(format!(
                        "{editor} runs in a terminal and no terminal program was found. Set $VISUAL to a desktop editor \
                         (for example `code -w`) or $TERMINAL to your terminal, then try again."
                    ))
                })?;
            let mut with_terminal = vec!["-e".to_string(), "sh".to_string()];
            with_terminal.append(&mut args);
            Ok(Launch { program: terminal, args: with_terminal, editor, from, gui })
        }
        Os::Windows => {
            let mut words = windows_words(&editor);
            words.push(file);
            if gui {
                let program = words.remove(0);
                return Ok(Launch { program, args: words, editor, from, gui });
            }
            // `cmd /c` reads the whole line as shell syntax, and Rust quotes an argument only
            // for spaces: a file named `x&calc&.md` (a teammate's memory, a cloned repository's
            // folder) would run `calc`. Such a path is refused rather than escaped.
            let path = words.last().map(String::as_str).unwrap_or_default();
            if let Some(c) = path.chars().find(|c| "&|<>^%!".contains(*c)) {
                return Err(ApiError::invalid(format!(
                    "The path {path} holds `{c}`, which the Windows command shell would read as a command, so {editor} \
                     is not started through it. Set $VISUAL to a desktop editor (for example `code -w`), or open the \
                     file from your editor."
                )));
            }
            // `start` opens a console window for the editor; the empty argument is its title.
            let mut args = vec!["/c".to_string(), "start".to_string(), String::new(), "/wait".to_string()];
            args.append(&mut words);
            Ok(Launch { program: "cmd".into(), args, editor, from, gui })
        }
    }
}

/// `$VISUAL`, `$EDITOR`, then the first of `code`, `vi`, `nano` on the PATH.
fn choose_editor(env: &Environment, found: &dyn Fn(&str) -> bool) -> Option<(String, Option<String>)> {
    for key in ["VISUAL", "EDITOR"] {
        if let Some(v) = env.var(key).map(str::trim).filter(|v| !v.is_empty()) {
            return Some((v.to_string(), Some(key.to_string())));
        }
    }
    ["code", "vi", "nano"].into_iter().find(|p| found(p)).map(|p| (p.to_string(), None))
}

/// Whether the editor is one of Claude Code's GUI editors, by its program's file name (on
/// Windows without `.exe`/`.cmd`/`.bat` and in any case, as Windows names files).
fn is_gui(os: Os, editor: &str) -> bool {
    if os == Os::Windows {
        let program = windows_words(editor).into_iter().next().unwrap_or_default().to_ascii_lowercase();
        let base = program.rsplit(['/', '\\']).next().unwrap_or(&program);
        let base = [".exe", ".cmd", ".bat"].iter().find_map(|ext| base.strip_suffix(ext)).unwrap_or(base);
        return GUI_EDITORS.contains(&base);
    }
    let program = editor.split_whitespace().next().unwrap_or("");
    let base = program.rsplit('/').next().unwrap_or(program);
    GUI_EDITORS.contains(&base)
}

/// An editor command split into words; a leading double-quoted program keeps its spaces
/// (`"C:\Program Files\Notepad++\notepad++.exe" -multiInst`).
fn windows_words(editor: &str) -> Vec<String> {
    let editor = editor.trim();
    if let Some(rest) = editor.strip_prefix('"') {
        if let Some((program, args)) = rest.split_once('"') {
            return std::iter::once(program.to_string()).chain(args.split_whitespace().map(str::to_string)).collect();
        }
    }
    editor.split_whitespace().map(str::to_string).collect()
}

/// One shell word: single quotes, with each `'` written as `'\''`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Text inside an AppleScript string literal.
fn applescript_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn on_path(env: &Environment, program: &str) -> bool {
    let path = env.var("PATH").unwrap_or("/usr/local/bin:/usr/bin:/bin");
    std::env::split_paths(path).any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        // Windows finds `code` as `code.cmd` or `code.exe`.
        p.is_file() || ["exe", "cmd", "bat"].iter().any(|ext| p.with_extension(ext).is_file())
    }
}

/// An absolute path that exists; the window may only name real files and folders.
fn existing(path: &Path) -> Result<PathBuf, ApiError> {
    if !path.is_absolute() {
        return Err(ApiError::invalid(format!("{} is not an absolute path.", path.display())));
    }
    std::fs::canonicalize(path).map_err(|e| {
        ApiError::not_found(format!("{} cannot be opened: {e}. It may have been moved or deleted; reload.", path.display()))
    })
}

/// Runs `program` with `args` to its end and collects what it printed. Stdin is empty: an editor
/// that wants input gets a terminal window of its own (`plan_for`). On Windows no console
/// window flashes up for it (a GUI app's child gets one otherwise); `start` still opens one for
/// a terminal editor.
async fn run(program: &str, args: &[String]) -> std::io::Result<std::process::Output> {
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(std::process::Stdio::null());
    #[cfg(windows)]
    command.creation_flags(0x0800_0000); // CREATE_NO_WINDOW
    command.output().await
}

/// Opens a file in the editor Claude Code would use and, for a desktop editor, waits until
/// it closes (the window reloads from `FilesChanged` either way).
#[tauri::command]
#[specta::specta]
pub async fn open_in_editor(m: State<'_, Mneme>, path: PathBuf) -> Answer<EditorRun> {
    let file = existing(&path)?;
    if !file.is_file() {
        return Err(ApiError::invalid(format!("{} is not a file; reveal a folder instead.", path.display())));
    }
    let launch = plan(m.environment(), &file)?;
    let out = run(&launch.program, &launch.args).await.map_err(|e| {
        ApiError::new(ErrorCode::Io, format!("Could not start {}: {e}. Check $VISUAL / $EDITOR.", launch.editor))
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(ApiError::new(
            ErrorCode::Io,
            format!("{} stopped with an error ({:?}): {}", launch.editor, out.status.code(), stderr.trim()),
        ));
    }
    Ok(EditorRun { editor: launch.editor, from: launch.from, waited: launch.gui })
}

/// How the file manager is asked to show `target` without opening it. Handing a folder to the
/// system's "open" is not safe on macOS: `open` launches an app bundle (any folder named
/// `X.app`, which a cloned repository can hold under `.claude/rules/`), so Finder gets `-R`,
/// which only selects the item. Explorer selects it too. Elsewhere the folder holding it is
/// opened with `xdg-open`, which hands a folder to the file manager and runs nothing.
fn reveal_plan(os: Os, target: &Path, is_dir: bool) -> (&'static str, Vec<String>) {
    let shown = target.to_string_lossy().into_owned();
    match os {
        Os::MacOs => ("open", vec!["-R".into(), shown]),
        Os::Windows => ("explorer", vec![format!("/select,{shown}")]),
        Os::Linux => {
            let folder = if is_dir { target } else { target.parent().unwrap_or(target) };
            ("xdg-open", vec![folder.to_string_lossy().into_owned()])
        }
    }
}

/// Shows a file or folder in the file manager (the folder holding a file, where the file
/// manager cannot select one).
#[tauri::command]
#[specta::specta]
pub async fn reveal(path: PathBuf) -> Answer<()> {
    let target = existing(&path)?;
    let (program, args) = reveal_plan(Os::current(), &target, target.is_dir());
    let out = run(program, &args).await.map_err(|e| {
        ApiError::new(ErrorCode::Io, format!("Could not start {program} to show {} in the file manager: {e}.", target.display()))
    })?;
    // Explorer exits with 1 even when it showed the folder.
    if !out.status.success() && program != "explorer" {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(ApiError::new(
            ErrorCode::Io,
            format!("Could not show {} in the file manager: {program} stopped with {:?}: {}", target.display(), out.status.code(), stderr.trim()),
        ));
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::fs;

    fn env_with(dir: &Path, vars: &[(&str, &str)]) -> Environment {
        let mut env = Environment::with_home(dir).set_var("PATH", dir.join("bin").to_string_lossy());
        for (k, v) in vars {
            env = env.set_var(k, *v);
        }
        env
    }

    fn install(dir: &Path, program: &str) {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join(program), "#!/bin/sh\n").unwrap();
        fs::set_permissions(bin.join(program), fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn reveal_never_hands_a_folder_to_macos_open() {
        let bundle = Path::new("/repo/.claude/rules/Evil.app");
        let file = bundle.join("readme.md");
        assert_eq!(reveal_plan(Os::MacOs, &file, false), ("open", vec!["-R".to_string(), file.display().to_string()]));
        assert_eq!(reveal_plan(Os::MacOs, bundle, true), ("open", vec!["-R".to_string(), bundle.display().to_string()]));
        assert_eq!(reveal_plan(Os::Windows, &file, false).1, vec![format!("/select,{}", file.display())]);
        assert_eq!(reveal_plan(Os::Linux, &file, false), ("xdg-open", vec![bundle.display().to_string()]));
        assert_eq!(reveal_plan(Os::Linux, bundle, true), ("xdg-open", vec![bundle.display().to_string()]));
    }

    #[test]
    fn visual_then_editor_then_the_path() {
        let t = tempfile::tempdir().unwrap();
        let file = Path::new("/tmp/a b/CLAUDE.md");
        install(t.path(), "code");
        install(t.path(), "vi");

        let l = plan(&env_with(t.path(), &[("VISUAL", " subl "), ("EDITOR", "nano")]), file).unwrap();
        assert_eq!((l.editor.as_str(), l.from.as_deref(), l.gui), ("subl --wait", Some("VISUAL"), true));
        assert_eq!(l.program, "sh");
        assert_eq!(l.args, ["-c", "subl --wait \"$1\"", "mneme-editor", "/tmp/a b/CLAUDE.md"]);

        let l = plan(&env_with(t.path(), &[("VISUAL", "  "), ("EDITOR", "/opt/bin/codium --new-window")]), file).unwrap();
        assert_eq!((l.editor.as_str(), l.from.as_deref(), l.gui), ("/opt/bin/codium --new-window", Some("EDITOR"), true));

        let l = plan(&env_with(t.path(), &[]), file).unwrap();
        assert_eq!((l.editor.as_str(), l.from, l.gui), ("code -w", None, true), "code comes first on the PATH");
    }

    #[test]
    fn terminal_editors_get_a_terminal_or_a_clear_error() {
        let t = tempfile::tempdir().unwrap();
        let file = Path::new("/m/MEMORY.md");
        install(t.path(), "nano");
        let err = plan(&env_with(t.path(), &[]), file).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound);
        assert!(err.message.contains("$VISUAL"), "{}", err.message);

        install(t.path(), "xterm");
        let l = plan(&env_with(t.path(), &[]), file).unwrap();
        assert_eq!((l.program.as_str(), l.editor.as_str(), l.gui), ("xterm", "nano", false));
        assert_eq!(l.args, ["-e", "sh", "-c", "nano \"$1\"", "mneme-editor", "/m/MEMORY.md"]);

        let l = plan(&env_with(t.path(), &[("EDITOR", "vim"), ("TERMINAL", "kitty")]), file).unwrap();
        assert_eq!((l.program.as_str(), l.editor.as_str()), ("kitty", "vim"));
    }

    /// A PATH holding exactly `programs`, without touching the disk.
    fn only(programs: &'static [&'static str]) -> impl Fn(&str) -> bool {
        move |p| programs.contains(&p)
    }

    #[test]
    fn macos_refuses_to_type_a_path_that_could_run_a_command_into_terminal() {
        let env = Environment::with_home("/Users/ana").set_var("EDITOR", "vim");
        for (name, said) in [("r\u{15}open -a Calculator; echo '", "U+0015"), ("a\\'\\''; open -a Calculator; #", "a backslash")] {
            let file = PathBuf::from(format!("/Users/ana/repo/.claude/rules/{name}/r.md"));
            let e = plan_for(Os::MacOs, &env, &file, &only(&[])).unwrap_err();
            assert!(e.message.contains(said) && e.message.contains("$VISUAL"), "{}", e.message);
            assert!(!e.message.contains('\u{15}'), "the message itself is safe to print: {}", e.message);
            // A desktop editor gets the path as one argument, whatever it holds.
            let l = plan_for(Os::MacOs, &env.clone().set_var("EDITOR", "code -w"), &file, &only(&[])).unwrap();
            assert_eq!(l.args.last().map(String::as_str), file.to_str());
        }
    }

    #[test]
    fn macos_runs_gui_editors_through_sh_and_terminal_editors_in_terminal_app() {
        let env = Environment::with_home("/Users/ana");
        let file = Path::new("/Users/ana/it's \"here\"/CLAUDE.md");
        let l = plan_for(Os::MacOs, &env, file, &only(&["code", "vi"])).unwrap();
        assert_eq!((l.program.as_str(), l.editor.as_str(), l.gui), ("sh", "code -w", true));
        assert_eq!(l.args, ["-c", "code -w \"$1\"", "mneme-editor", "/Users/ana/it's \"here\"/CLAUDE.md"]);

        let l = plan_for(Os::MacOs, &env.clone().set_var("EDITOR", "vim"), file, &only(&[])).unwrap();
        assert_eq!((l.program.as_str(), l.gui), ("osascript", false));
        // The shell command quotes the path; the AppleScript string escapes its quotes.
        assert_eq!(
            l.args,
            ["-e", r#"tell application "Terminal" to do script "vim '/Users/ana/it'\\''s \"here\"/CLAUDE.md'""#]
        );
    }

    #[test]
    fn windows_starts_the_program_itself_and_terminal_editors_in_a_console() {
        let env = Environment::with_home(r"C:\Users\ana");
        let file = Path::new(r"C:\Users\ana\my code\CLAUDE.md");
        let l = plan_for(Os::Windows, &env, file, &only(&["code"])).unwrap();
        assert_eq!((l.program.as_str(), l.editor.as_str(), l.gui), ("code", "code -w", true));
        assert_eq!(l.args, ["-w", r"C:\Users\ana\my code\CLAUDE.md"]);

        let quoted = env.clone().set_var("VISUAL", r#""C:\Program Files\Notepad++\notepad++.exe" -multiInst"#);
        let l = plan_for(Os::Windows, &quoted, file, &only(&[])).unwrap();
        assert!(l.gui, "notepad++.exe is a GUI editor");
        assert_eq!(l.program, r"C:\Program Files\Notepad++\notepad++.exe");
        assert_eq!(l.args, ["-multiInst", r"C:\Users\ana\my code\CLAUDE.md"]);

        let l = plan_for(Os::Windows, &env.clone().set_var("EDITOR", "vim"), file, &only(&[])).unwrap();
        assert_eq!((l.program.as_str(), l.gui), ("cmd", false));
        assert_eq!(l.args, ["/c", "start", "", "/wait", "vim", r"C:\Users\ana\my code\CLAUDE.md"]);
        // A path the command shell would run part of is refused for a terminal editor, and
        // still given as one argument to a desktop editor (no shell between).
        let hostile = Path::new(r"C:\Users\ana\.claude\projects\p\memory\team\x&calc&.md");
        let err = plan_for(Os::Windows, &env.clone().set_var("EDITOR", "vim"), hostile, &only(&[])).unwrap_err();
        assert!(err.message.contains("`&`") && err.message.contains("$VISUAL"), "{}", err.message);
        let l = plan_for(Os::Windows, &env, hostile, &only(&["code"])).unwrap();
        assert_eq!(l.args, ["-w", hostile.to_str().unwrap()]);

        assert!(is_gui(Os::Windows, "CODE.CMD --wait") && !is_gui(Os::Linux, "CODE.CMD --wait"));
    }

    #[test]
    fn no_editor_at_all() {
        let t = tempfile::tempdir().unwrap();
        let err = plan(&env_with(t.path(), &[]), Path::new("/x.md")).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound);
    }
}
