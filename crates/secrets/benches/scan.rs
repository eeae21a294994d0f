//! Scanning speed on team-memory-sized text: a 200 KB file (under the 250 KB sync cap) of
//! ordinary Markdown, clean and with one secret at the end. Run with
//! `cargo bench -p mneme-secrets`.

use divan::{black_box, Bencher};

fn main() {
    divan::main();
}

/// Memory-file prose with the prefixes rules look for (`sk-`, `AKIA`, `ghp`, `-----BEGIN`) so the
/// prefilter has near-misses to reject, about 200 KB.
fn markdown() -> String {
    let para = "## Deploys\n\nDeploys go through staging first; the `sk-` prefix marks API keys, never paste one.\n\
                Ask in #infra before touching AKIA-style credentials or ghp tokens. See -----BEGIN notes below.\n\
                Connection: postgres://app:${DB_PASSWORD}@db.internal:5432/app (password from the vault).\n\n";
    para.repeat(200_000 / para.len())
}

fn with_secret() -> String {
    format!("{}\nCI token: ghp_{}\n", markdown(), "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd")
}

#[divan::bench]
fn scan_clean_200kb(b: Bencher) {
    let text = markdown();
    let _ = mneme_secrets::scan("warm up the lazily compiled rules");
    b.bench(|| mneme_secrets::scan(black_box(&text)));
}

#[divan::bench]
fn scan_with_secret_200kb(b: Bencher) {
    let text = with_secret();
    let _ = mneme_secrets::scan("warm up");
    b.bench(|| mneme_secrets::scan(black_box(&text)));
}

/// Claude Code's own check, for 2.1.197's table and the newest.
#[divan::bench(args = [mneme_secrets::SecretScanner::V2_1_196, mneme_secrets::SecretScanner::V2_1_323])]
fn scan_claude_code_clean_200kb(b: Bencher, scanner: mneme_secrets::SecretScanner) {
    let text = markdown();
    let _ = mneme_secrets::scan_claude_code("warm up", scanner);
    b.bench(|| mneme_secrets::scan_claude_code(black_box(&text), scanner));
}

#[divan::bench]
fn redact_clean_200kb(b: Bencher) {
    let text = markdown();
    let _ = mneme_secrets::redact("warm up");
    b.bench(|| mneme_secrets::redact(black_box(&text)));
}

/// One 200 KB line of assignments the generic rule matches and its entropy floor drops: every
/// match's line is the whole text (this was quadratic before lines were found once).
#[divan::bench]
fn scan_one_long_line_of_dropped_matches_200kb(b: Bencher) {
    let item = format!("token={} ", "x".repeat(30));
    let text = item.repeat(200_000 / item.len());
    let _ = mneme_secrets::scan("warm up");
    b.bench(|| mneme_secrets::scan(black_box(&text)));
}

#[divan::bench]
fn scan_one_line(b: Bencher) {
    let _ = mneme_secrets::scan("warm up");
    b.bench(|| mneme_secrets::scan(black_box("Remember: run the migrations before the seed script.")));
}
