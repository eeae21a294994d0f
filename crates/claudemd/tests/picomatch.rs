//! The picomatch port against the real package: generated globs (every construct picomatch
//! gives a meaning: globstars, classes, POSIX classes, braces, ranges, extglobs, groups, pipes,
//! quotes, escapes, negation) and paths made from them, compared on the regex source picomatch
//! builds and on `isMatch(path, glob, { dot: true })`, the call Claude Code makes for
//! `claudeMdExcludes`. The package is the one the UI's lockfile pins (`ui/node_modules/picomatch`,
//! installed by `npm test` before the Rust tests run).

use mneme_claudemd::picomatch::{make_re_source, Matcher, Options};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A small deterministic generator (no seed file to keep; the case count is what matters).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const NAMES: &[&str] = &["a", "b", "aa", "ab", "CLAUDE.md", ".claude", "x.md", ".x", "é", "1", "2", "keep", "rules", "a.b", "a-b", "a+b"];

/// A glob piece and a few strings it is meant to stand for (so matches are common).
fn piece(r: &mut Lcg) -> (String, Vec<String>) {
    let (g, samples): (&str, &[&str]) = match r.below(40) {
        0..=9 => {
            let n = r.pick(NAMES);
            return (n.to_string(), vec![n.to_string()]);
        }
        10 | 11 => ("*", &["a", "x.md", ".x", ""]),
        12 | 13 => ("**", &["a", "a/b", "", ".claude/rules"]),
        14 => ("?", &["a", ".", "é"]),
        15 => ("[ab]", &["a", "c"]),
        16 => ("[a-c]", &["b", "d"]),
        17 => ("[!a]", &["!", "b"]),
        18 => ("[^a]", &["b", "a"]),
        19 => ("[[:alpha:]]", &["a", "1"]),
        20 => ("{a,b}", &["a", "b", "c"]),
        21 => ("{a}", &["a", "{a}"]),
        22 => ("{1..3}", &["2", "4"]),
        23 => ("{a..c}", &["b", "d"]),
        24 => ("@(a|b)", &["a", "ab"]),
        25 => ("!(a)", &["a", "b", "ab"]),
        26 => ("+(a)", &["aa", "a", "b"]),
        27 => ("*(a|b)", &["ab", "", "c"]),
        28 => ("?(a)", &["a", ""]),
        29 => ("(a|b)", &["a", "b"]),
        30 => ("a|b", &["a", "b", "a|b"]),
        31 => ("\\*", &["*", "a"]),
        32 => ("\"a*\"", &["a*", "ab"]),
        33 => ("$", &["$"]),
        34 => ("^", &["^"]),
        35 => ("]", &["]"]),
        36 => ("[", &["["]),
        37 => ("{a,", &["{a,", "a"]),
        38 => ("**/", &["", "a/"]),
        _ => ("..", &[".."]),
    };
    (g.to_string(), samples.iter().map(|s| s.to_string()).collect())
}

/// A glob and paths to try it on.
fn case(r: &mut Lcg) -> (String, Vec<String>) {
    let mut glob = String::new();
    let mut paths = vec![String::new(); 3];
    match r.below(10) {
        0 => glob.push('!'),
        1 => glob.push_str("./"),
        _ => {}
    }
    let absolute = r.below(4) != 0;
    if absolute {
        glob.push('/');
        for p in &mut paths {
            p.push('/');
        }
    }
    let segments = 1 + r.below(4);
    for s in 0..segments {
        if s > 0 {
            glob.push('/');
            for p in &mut paths {
                p.push('/');
            }
        }
        for _ in 0..1 + r.below(3) {
            let (g, samples) = piece(r);
            glob.push_str(&g);
            for p in &mut paths {
                p.push_str(&samples[r.below(samples.len())]);
            }
        }
    }
    if r.below(8) == 0 {
        glob.push('/');
    }
    // One path unrelated to the glob.
    let depth = 1 + r.below(4);
    let random: Vec<&str> = (0..depth).map(|_| r.pick(NAMES)).collect();
    paths.push(format!("/{}", random.join("/")));
    paths.retain(|p| !p.is_empty());
    paths.dedup();
    (glob, paths)
}

fn picomatch_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui/node_modules/picomatch");
    dir.join("package.json").is_file().then_some(dir)
}

#[test]
fn agrees_with_the_picomatch_package_on_generated_globs() {
    let Some(dir) = picomatch_dir() else {
        let msg = "ui/node_modules/picomatch is missing: run `npm ci --prefix ui` (npm test does)";
        if std::env::var_os("MNEME_REQUIRE_CLAUDE").is_some() {
            panic!("{msg}");
        }
        eprintln!("skipped: {msg}");
        return;
    };
    let mut r = Lcg(20261203);
    let mut cases = Vec::new();
    for _ in 0..4000 {
        cases.push(case(&mut r));
    }
    let input = serde_json::to_string(&cases).unwrap();
    let script = r#"
const pm = require(process.argv[1]);
let data = ''; process.stdin.on('data', d => data += d); process.stdin.on('end', () => {
  const out = JSON.parse(data).map(([glob, paths]) => {
    const re = pm.makeRe(glob, { dot: true }, false, true);
    const st = re.state;
    let source = `^(?:${st.output})$`;
    if (st.negated === true) source = `^(?!${source}).*$`;
    return [source, paths.map(p => pm.isMatch(p, glob, { dot: true }))];
  });
  process.stdout.write(JSON.stringify(out));
});"#;
    let mut child = Command::new("node")
        .arg("-e")
        .arg(script)
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs (npm test installs it)");
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let expected: Vec<(String, Vec<bool>)> = serde_json::from_slice(&out.stdout).unwrap();

    let opts = Options { dot: true };
    let mut failures = Vec::new();
    let (mut compared, mut matched) = (0, 0);
    for ((glob, paths), (source, answers)) in cases.iter().zip(&expected) {
        let ours = make_re_source(glob, opts);
        if &ours != source {
            failures.push(format!("source of {glob:?}:\n  picomatch {source}\n  port      {ours}"));
            continue;
        }
        let m = Matcher::new(glob, opts).expect("non-empty, short");
        for (path, want) in paths.iter().zip(answers) {
            compared += 1;
            matched += usize::from(*want);
            if m.is_match(path) != *want {
                failures.push(format!("{glob:?} vs {path:?}: picomatch {want}, port {}", !want));
            }
        }
    }
    eprintln!("{} globs, {compared} paths, {matched} matches", cases.len());
    assert!(failures.is_empty(), "{} differences, first ones:\n{}", failures.len(), failures[..failures.len().min(15)].join("\n"));
    // The generator must exercise both answers.
    assert!(matched > compared / 10 && matched < compared * 9 / 10, "{matched} of {compared}");
}
