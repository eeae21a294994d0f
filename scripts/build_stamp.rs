// The version stamp, `include!`d by the build scripts of the binaries that report it (`mneme`,
// `mneme-server`, the desktop app): sets `MNEME_COMMIT` for `env!` to the commit the build was
// made from. No time or host goes in, so building one commit twice stamps the same text.
//
// `$MNEME_COMMIT` wins when set (a build from a source archive, which has no `.git`); else
// `git rev-parse` in the crate's folder; else "unknown". Uncommitted changes are not marked:
// the tree is edited by several people at once, and a per-file dirty check would rebuild the
// binaries on every save.

fn stamp_commit() {
    println!("cargo:rerun-if-env-changed=MNEME_COMMIT");
    let commit = std::env::var("MNEME_COMMIT").ok().filter(|c| !c.trim().is_empty()).or_else(git_commit);
    println!("cargo:rustc-env=MNEME_COMMIT={}", commit.as_deref().unwrap_or("unknown").trim());
}

fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = std::process::Command::new("git").args(args).current_dir(&dir).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn git_commit() -> Option<String> {
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    // Rebuild the stamp when HEAD moves: HEAD itself, the branch it names, and packed-refs
    // (where a branch lives after `git gc`). Paths come back relative to the crate's folder.
    let dir = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(p) = git(&["rev-parse", "--git-path", name]) {
            println!("cargo:rerun-if-changed={}", dir.join(p).display());
        }
    }
    Some(commit)
}
