//! The offline dream: Claude Code's four consolidation phases done deterministically, with no
//! model, as a [`Changeset`] to review, apply and undo.
//!
//! 1. **Orient**: read every private topic file, `MEMORY.md` and the daily logs. `team/` is
//!    the team's (Claude Code's prompt asks to prune it conservatively and never to promote into
//!    it), so it is left alone.
//! 2. **Gather**: daily-log bullets written since the last consolidation that state a
//!    preference, a fact about the user, a pointer or a project fact ([`crate::logs::distil`]).
//! 3. **Consolidate**: each such fact joins the memory that already covers it or becomes a new
//!    topic file; relative dates become absolute against the memory's own date (its `created:`
//!    field, else its modification time); memories of the same type that say the same thing
//!    ([`crate::similar::near_duplicate`]) merge into the newest, which keeps every distinct
//!    line of the others, and the others go to the trash.
//! 4. **Prune and index**: a line pointing at a missing file is a memory too (Claude Code
//!    loads it into every session, and it is often the only copy left): it is pointed at the
//!    memory it was renamed to, or the memory is written back as a topic file from the line
//!    (type from the file name's prefix, or none, flagged for review), or, where no file can be
//!    written, it stays and is flagged. A repeated line goes once its text is in the topic
//!    file. Topic files without a line get one,
//!    lines over ~200 characters are shortened (their detail moved into the topic file first),
//!    and when `MEMORY.md` is past Claude Code's 200-line / 25,000-unit cap the least important
//!    entries (not feedback, oldest first) move out into a topic file the index links to
//!    ([`OVERFLOW_FILE`]), so the index fits and feedback and recent memories are the ones
//!    Claude Code loads.
//!
//! Nothing is deleted: removals are changes with no `after`, which [`apply_changeset`] turns
//! into moves to Mneme's trash, and every change keeps the full previous text. Every line the
//! plan takes out of a file is either moved verbatim or vouched for in [`Plan::accounted`]
//! (merged duplicates, dates made absolute), so it passes [`crate::safety::check`].
//!
//! [`apply_changeset`]: mneme_agent::apply_changeset

use crate::dates::{self, iso};
use crate::error::DreamError;
use crate::lock::ns_since_epoch;
use crate::logs::{self, Fact};
use crate::safety::{self, Accounted};
use crate::similar::{self, Fingerprint};
use mneme_agent::{Changeset, FileChange};
use mneme_core::frontmatter;
use mneme_core::text::utf16_len;
use mneme_core::MemoryType;
use mneme_store::local_time::LocalZone;
use mneme_store::memdir::{
    loaded_index_lines_as, new_memory_content, parse_index, render_entry, slugify, IndexDoc, Memdir, Scope, INDEX_FILE,
    LONG_INDEX_LINE_UNITS,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A shortened index line aims for this many UTF-16 units (the prompt's "under ~150").
pub const TARGET_INDEX_LINE_UNITS: usize = 150;

/// Where index lines that still fall past Claude Code's cap go: a topic file (so recall can
/// still find them) that `MEMORY.md` links to.
pub const OVERFLOW_FILE: &str = "memory-index-overflow.md";
const OVERFLOW_NAME: &str = "Older index entries";
const OVERFLOW_HOOK: &str = "index lines moved out of MEMORY.md to keep it within Claude Code's 200-line / 25,000-character cap";

/// What the offline dream needs besides the folder.
#[derive(Debug, Clone)]
pub struct OfflineOptions {
    /// The local time zone: dates are local, as Claude Code's are, each with the offset in force
    /// at its own instant (the day a file was written, the last consolidation, now), so a dream
    /// over files from both sides of a daylight-saving change dates each as the clock showed it.
    pub zone: LocalZone,
    /// The previous consolidation (the lock's mtime before this dream); logs are read from there.
    pub since: Option<SystemTime>,
    /// Now, from the injected clock.
    pub now: SystemTime,
}

/// Counts for the summary and the Dreams screen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStats {
    pub merged: usize,
    pub dated: usize,
    pub distilled: usize,
    pub index_added: usize,
    /// Repeated lines dropped (their text kept in the topic file).
    pub index_removed: usize,
    pub index_shortened: usize,
    /// Lines whose file was missing, written back as topic files from the line.
    #[serde(default)]
    pub index_recreated: usize,
    /// Lines whose file was missing, pointed at the unindexed memory of the same name.
    #[serde(default)]
    pub index_repointed: usize,
    /// Lines whose file was missing and cannot be written back: kept, and flagged in the notes.
    #[serde(default)]
    pub index_dangling: usize,
    /// Entries among the lines moved into [`OVERFLOW_FILE`].
    pub index_demoted: usize,
    /// Lines moved into [`OVERFLOW_FILE`].
    pub index_overflowed: usize,
    /// Fields a newer Mneme wrote here that this one does not know, written back with the
    /// record (see [`crate::history::DreamRecord::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// The offline dream's result, not yet applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub changeset: Changeset,
    /// Things worth telling the user that are not changes (links left dangling by a merge…).
    pub notes: Vec<String>,
    pub stats: PlanStats,
    /// One paragraph, like the model's closing summary.
    pub summary: String,
    /// Lines the plan removes that are duplicates or rewrites of text it keeps, for the
    /// safety net.
    pub accounted: Vec<Accounted>,
}

/// A new index: its text before (`None` when there was none), after, and why.
type IndexChange = (Option<String>, String, Vec<String>);

struct Doc {
    original: Option<String>,
    current: Option<String>,
    kind: Option<MemoryType>,
    mtime_ns: i128,
    /// A private topic file the dream may edit (UTF-8, a regular file, not a log).
    editable: bool,
    /// On disk but not readable as UTF-8: it exists, and the dream leaves it alone.
    unreadable: bool,
    reasons: Vec<String>,
}

impl Doc {
    fn changed(&self) -> bool {
        self.original != self.current
    }
}

struct Work<'a> {
    memdir: &'a Memdir,
    opts: OfflineOptions,
    docs: BTreeMap<String, Doc>,
    /// Private files that `team/MEMORY.md` points at: not merged away, so the team index is
    /// never edited behind the team's back.
    team_linked: HashSet<String>,
    notes: Vec<String>,
    stats: PlanStats,
    /// `[[link]]` name → the files whose body links it (built once, before merging).
    links: HashMap<String, Vec<String>>,
    /// Normalized text and words of each editable memory, for placing daily-log facts.
    known: BTreeMap<String, (String, HashSet<String>)>,
    accounted: Vec<Accounted>,
}

/// The parts of a topic file: everything up to the body, and the body.
fn split_frontmatter(content: &str) -> (&str, &str) {
    match frontmatter::block_bounds(content) {
        Some((_, whole)) => content.split_at(whole),
        None => ("", content),
    }
}

fn header_fields(content: &str, rel: &str) -> (String, String) {
    let parsed = frontmatter::parse(content);
    let fm = parsed.frontmatter.as_ref();
    let stem = rel.rsplit('/').next().unwrap_or(rel).trim_end_matches(".md").to_string();
    (fm.and_then(|f| f.name()).unwrap_or(stem), fm.and_then(|f| f.description()).unwrap_or_default())
}

/// Cuts `text` to at most `max` UTF-16 units at a word boundary, adding `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if utf16_len(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        let next = if out.is_empty() { word.to_string() } else { format!("{out} {word}") };
        if utf16_len(&next) + 1 > max {
            break;
        }
        out = next;
    }
    if out.is_empty() {
        out = text.chars().take_while({
            let mut units = 0;
            move |c| {
                units += c.len_utf16();
                units < max
            }
        }).collect();
    }
    format!("{}…", out.trim_end_matches([',', ';', ':', '.', ' ', '—', '-']))
}

impl<'a> Work<'a> {
    /// The local date of `ns` (nanoseconds since the epoch), with the offset in force then.
    fn local_date_of(&self, ns: i128) -> time::Date {
        dates::local_date_in(ns, &self.opts.zone)
    }

    fn load(memdir: &'a Memdir, opts: OfflineOptions) -> Result<Work<'a>, DreamError> {
        let scan = memdir.scan()?;
        let mut docs = BTreeMap::new();
        for f in scan.files.iter().filter(|f| f.scope == Scope::Private) {
            let regular = fs::symlink_metadata(&f.abs_path).is_ok_and(|m| m.file_type().is_file());
            let text = fs::read(&f.abs_path).ok().and_then(|b| String::from_utf8(b).ok());
            let is_log = f.rel_path.starts_with("logs/");
            docs.insert(
                f.rel_path.clone(),
                Doc {
                    editable: regular && text.is_some() && !is_log,
                    unreadable: text.is_none(),
                    original: text.clone(),
                    current: text,
                    kind: f.memory_type,
                    mtime_ns: i128::from(f.mtime_ns),
                    reasons: Vec::new(),
                },
            );
        }
        let team_linked = match memdir.read_index(Scope::Team) {
            Ok(idx) => idx.lines.into_iter().filter_map(|l| l.entry).map(|e| e.rel_path).filter(|r| Scope::of(r) == Scope::Private).collect(),
            Err(_) => HashSet::new(),
        };
        Ok(Work {
            memdir,
            opts,
            docs,
            team_linked,
            notes: Vec::new(),
            stats: PlanStats::default(),
            links: HashMap::new(),
            known: BTreeMap::new(),
            accounted: Vec::new(),
        })
    }

    fn exists(&self, rel: &str) -> bool {
        match self.docs.get(rel) {
            Some(d) => d.current.is_some() || d.unreadable,
            None => fs::symlink_metadata(rel.split('/').fold(self.memdir.root().to_path_buf(), |p, s| p.join(s))).is_ok(),
        }
    }

    fn editable(&self) -> impl Iterator<Item = (&String, &Doc)> {
        self.docs.iter().filter(|(_, d)| d.editable && d.current.is_some())
    }

    // ---- Phase 2/3: daily logs -------------------------------------------------------

    fn distil_logs(&mut self) {
        // Checked: the lock's mtime is whatever the file system stores, and a date past the
        // year 9999 has no calendar date here (`OffsetDateTime::from` panicked, the failed dream
        // rolled that mtime back, and every dream after it failed the same way). No local
        // date, no cut by time of day; the mtime filter below still applies. The time of day
        // is the clock's when the last dream ran: a log's bullets carry the time the clock
        // showed as they were written, and a daylight-saving change since then must not move
        // the cut an hour.
        let since_local = self.opts.since.and_then(|t| {
            let ns = ns_since_epoch(t);
            let o = time::UtcOffset::from_whole_seconds(self.opts.zone.offset_at_unix_ns(ns)).unwrap_or(time::UtcOffset::UTC);
            let dt = time::OffsetDateTime::from_unix_timestamp_nanos(ns).ok()?.checked_to_offset(o)?;
            Some((dt.date(), (dt.hour(), dt.minute())))
        });
        let since_ns = self.opts.since.map(ns_since_epoch);
        let mut facts: Vec<Fact> = Vec::new();
        for (rel, doc) in &self.docs {
            let Some(date) = logs::log_date(rel) else { continue };
            if since_ns.is_some_and(|s| doc.mtime_ns <= s) {
                continue;
            }
            if let Some(text) = &doc.original {
                facts.extend(logs::distil(rel, text, date, since_local));
            }
        }
        if facts.is_empty() {
            return;
        }
        self.known = self
            .editable()
            .map(|(r, d)| {
                let c = d.current.as_deref().unwrap_or_default();
                (r.clone(), (similar::normalized(c), similar::token_set(c)))
            })
            .collect();
        for fact in facts {
            self.absorb(fact);
        }
    }

    fn absorb(&mut self, fact: Fact) {
        let wanted = similar::normalized(&fact.text);
        if self.known.values().any(|(text, _)| text.contains(&wanted)) {
            return;
        }
        let when = match fact.time {
            Some((h, m)) => format!("{} {h:02}:{m:02}", iso(fact.date)),
            None => iso(fact.date),
        };
        // A memory of the same type that already holds most of the fact's words covers the
        // same subject: add the line there rather than start a near-duplicate.
        let words = similar::token_set(&fact.text);
        let home = self
            .known
            .iter()
            .filter(|(rel, _)| self.docs.get(*rel).is_some_and(|d| d.kind == Some(fact.kind)))
            .map(|(rel, (_, have))| {
                let shared = words.iter().filter(|w| have.contains(*w)).count();
                (rel.clone(), if words.is_empty() { 0.0 } else { shared as f64 / words.len() as f64 })
            })
            .filter(|(_, score)| *score >= 0.8)
            .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)));
        self.stats.distilled += 1;
        if let Some((rel, _)) = home {
            let doc = self.docs.get_mut(&rel).expect("chosen from docs");
            let current = doc.current.take().unwrap_or_default();
            let mut next = current.trim_end_matches('\n').to_string();
            next.push_str(&format!("\n\n{} (daily log, {when})\n", fact.text));
            self.known.insert(rel.clone(), (similar::normalized(&next), similar::token_set(&next)));
            doc.current = Some(next);
            doc.reasons.push(format!("added a fact from the daily log {}", fact.log_rel_path));
            return;
        }
        let base = format!("{}_{}", fact.kind.as_str(), slugify(&shorten(&fact.text, 40).replace('…', "")));
        let mut rel = format!("{base}.md");
        let mut n = 2;
        while self.docs.contains_key(&rel) || self.exists(&rel) {
            rel = format!("{base}-{n}.md");
            n += 1;
        }
        let name = shorten(&fact.text, 60);
        let description = shorten(&fact.text, TARGET_INDEX_LINE_UNITS);
        let body = format!("{}\n\nSource: daily log {} ({when}).", fact.text, fact.log_rel_path);
        let content = new_memory_content(&name, &description, Some(fact.kind), &body, self.memdir.type_form());
        self.known.insert(rel.clone(), (similar::normalized(&content), similar::token_set(&content)));
        self.docs.insert(
            rel,
            Doc {
                original: None,
                current: Some(content),
                kind: Some(fact.kind),
                mtime_ns: ns_since_epoch(self.opts.now),
                editable: true,
                unreadable: false,
                reasons: vec![format!("new {} memory distilled from the daily log {}", fact.kind.as_str(), fact.log_rel_path)],
            },
        );
    }

    // ---- Phase 3: relative dates ------------------------------------------------------

    fn absolutize_dates(&mut self) {
        let now_ns = ns_since_epoch(self.opts.now);
        let today = self.local_date_of(now_ns);
        let rels: Vec<String> = self.editable().filter(|(_, d)| d.original.is_some()).map(|(r, _)| r.clone()).collect();
        let mut ahead = Vec::new();
        for rel in rels {
            // The day the file was written is the day on the clock where it was written: the
            // offset in force then, which across a daylight-saving change is not today's.
            let written = self.local_date_of(self.docs[&rel].mtime_ns);
            let doc = self.docs.get_mut(&rel).expect("listed");
            let content = doc.current.clone().unwrap_or_default();
            let parsed = frontmatter::parse(&content);
            let created = parsed
                .frontmatter
                .as_ref()
                .and_then(|f| f.get("created"))
                .and_then(|v| match v {
                    yaml_serde::Value::String(s) => dates::parse_iso_date(s),
                    _ => None,
                });
            let (head, body) = split_frontmatter(&content);
            let rewrite = |on| {
                let (new_body, mut done) = dates::absolutize(body, on);
                let (new_head, head_done) = absolutize_description(head, on);
                done.extend(head_done);
                (new_head, new_body, done)
            };
            let on = created.unwrap_or(written);
            let (new_head, new_body, done) = rewrite(on);
            if done.is_empty() {
                continue;
            }
            // A file dated after now (a clock that was ahead when it was written, a file from
            // another machine) has no "yesterday" this dream can name: it would become a date
            // still to come. Left as it is, and said.
            if created.map_or(doc.mtime_ns > now_ns, |c| c > today) {
                ahead.push(rel.clone());
                continue;
            }
            // The lines that changed are rewrites, not losses: say so for the safety net.
            let old_lines: Vec<&str> = content.split('\n').collect();
            let new_text = format!("{new_head}{new_body}");
            let new_lines: Vec<&str> = new_text.split('\n').collect();
            let same_shape = old_lines.len() == new_lines.len();
            for (k, old) in old_lines.iter().enumerate() {
                let new = if same_shape { new_lines[k] } else { "" };
                if !same_shape || *old != new {
                    self.accounted.push(Accounted {
                        file: rel.clone(),
                        text: old.to_string(),
                        kept_in: rel.clone(),
                        why: if same_shape { format!("relative dates made absolute: {}", new.trim()) } else { "relative dates made absolute".into() },
                    });
                }
            }
            let shown: Vec<String> =
                done.iter().take(3).map(|c| format!("{} → {}", c.phrase, c.replacement)).collect();
            let more = if done.len() > 3 { format!(", +{} more", done.len() - 3) } else { String::new() };
            doc.current = Some(format!("{new_head}{new_body}"));
            doc.reasons.push(format!("relative dates made absolute against {} ({}{more})", iso(on), shown.join(", ")));
            self.stats.dated += 1;
        }
        if !ahead.is_empty() {
            self.notes.push(format!(
                "Relative dates were left as they are in {}: the file is dated after now (its `created:` date or the time it was last written is ahead of the clock), so \"yesterday\" there cannot be pinned to a day. Correct the clock or the file's date, and the next dream rewrites them.",
                ahead.join(", ")
            ));
        }
    }

    // ---- Phase 3: duplicates --------------------------------------------------------------

    fn merge_duplicates(&mut self) -> HashMap<String, String> {
        let mut merged_into = HashMap::new();
        let mut links: HashMap<String, Vec<String>> = HashMap::new();
        for (rel, d) in self.editable() {
            for l in frontmatter::links(split_frontmatter(d.current.as_deref().unwrap_or_default()).1) {
                links.entry(l).or_default().push(rel.clone());
            }
        }
        self.links = links;
        let mut by_kind: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        for (rel, d) in self.editable() {
            if let Some(k) = d.kind {
                if !self.team_linked.contains(rel) {
                    by_kind.entry(k.as_str()).or_default().push(rel.clone());
                }
            }
        }
        for rels in by_kind.values() {
            let prints: Vec<Fingerprint> = rels
                .iter()
                .map(|r| {
                    let c = self.docs[r].current.as_deref().unwrap_or_default();
                    let (name, desc) = header_fields(c, r);
                    Fingerprint::new(&name, &desc, split_frontmatter(c).1)
                })
                .collect();
            let bodies: Vec<&HashSet<String>> = prints.iter().map(|p| &p.body).collect();
            let mut parent: Vec<usize> = (0..rels.len()).collect();
            fn find(p: &mut [usize], i: usize) -> usize {
                let mut r = i;
                while p[r] != r {
                    p[r] = p[p[r]];
                    r = p[r];
                }
                r
            }
            // The clusters are the connected groups of near-duplicate pairs, so a pair already in
            // one cluster is not measured (see `similar::join`).
            similar::join(&bodies, similar::BODY_WITH_HEAD_MIN, |j, i, alike| {
                let (a, b) = (find(&mut parent, j), find(&mut parent, i));
                if a != b && alike() && similar::near_duplicate(&prints[j], &prints[i]).is_some() {
                    parent[a] = b;
                }
            });
            // Why a memory merges into the survivor: what the two have in common when they are
            // near-duplicates themselves (a pair the join finds), else that they are alike
            // through others of the cluster.
            let why = |s: usize, o: usize| -> String {
                let (a, b) = (&prints[s], &prints[o]);
                (similar::jaccard(&a.body, &b.body) >= similar::BODY_WITH_HEAD_MIN)
                    .then(|| similar::near_duplicate(a, b))
                    .flatten()
                    .unwrap_or_else(|| "similar to another memory merged here".into())
            };
            let mut clusters: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for i in 0..rels.len() {
                let r = find(&mut parent, i);
                clusters.entry(r).or_default().push(i);
            }
            for members in clusters.values().filter(|m| m.len() > 1) {
                let mut order = members.clone();
                // Newest first; the newest survives.
                order.sort_by(|&a, &b| self.docs[&rels[b]].mtime_ns.cmp(&self.docs[&rels[a]].mtime_ns).then(rels[a].cmp(&rels[b])));
                let survivor = order[0];
                let survivor_text = self.docs[&rels[survivor]].current.clone().unwrap_or_default();
                let mut seen: HashSet<String> =
                    split_frontmatter(&survivor_text).1.lines().map(similar::normalized).filter(|l| !l.is_empty()).collect();
                for &other in &order[1..] {
                    let reason = why(survivor, other);
                    self.merge(&rels[survivor], &rels[other], &reason, &mut seen);
                    merged_into.insert(rels[other].clone(), rels[survivor].clone());
                }
            }
        }
        merged_into
    }

    /// Merges `from` into `into`. `seen` holds the normalised lines of `into`'s body: the caller
    /// keeps it across a cluster's merges, since each adds only the lines it kept (normalising
    /// the growing body again for every copy was quadratic in the cluster's size).
    fn merge(&mut self, into: &str, from: &str, why: &str, seen: &mut HashSet<String>) {
        let from_text = self.docs[from].current.clone().unwrap_or_default();
        let into_text = self.docs[into].current.clone().unwrap_or_default();
        let (head, body) = split_frontmatter(&into_text);
        let mut extra: Vec<String> = Vec::new();
        for line in split_frontmatter(&from_text).1.lines() {
            let n = similar::normalized(line);
            if !n.is_empty() && seen.insert(n) {
                extra.push(line.trim_end().to_string());
            }
        }
        // Its description too, where the survivor does not say it yet: duplicates are often
        // found by their bodies alone, so the description may be what set the two apart. (Its
        // name is an identifier, and goes with the file.)
        let have = format!(" {} ", safety::words(&format!("{into_text}\n{}", extra.join("\n"))).join(" "));
        let fm = frontmatter::parse(&from_text).frontmatter;
        if let Some(value) = fm.as_ref().and_then(|f| f.get("description")).and_then(|v| v.as_str()).map(str::trim).filter(|v| !v.is_empty()) {
            let w = safety::words(value);
            if !w.is_empty() && !have.contains(&format!(" {} ", w.join(" "))) && seen.insert(similar::normalized(value)) {
                extra.push(value.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
        let kept = extra.len();
        if !extra.is_empty() {
            let mut b = body.trim_end_matches(['\n', '\r']).to_string();
            b.push_str("\n\n");
            b.push_str(&extra.join("\n"));
            b.push('\n');
            self.docs.get_mut(into).expect("doc").current = Some(format!("{head}{b}"));
        }
        self.docs.get_mut(into).expect("doc").reasons.push(format!(
            "merged the duplicate {from} into it ({why}); kept {kept} distinct line{}",
            if kept == 1 { "" } else { "s" }
        ));
        // Its distinct body lines, and its description where the survivor lacked it, were
        // kept above.
        if let Some(original) = self.docs[from].original.clone() {
            let (head, _) = split_frontmatter(&original);
            for line in head.split('\n') {
                self.accounted.push(Accounted {
                    file: from.to_string(),
                    text: line.to_string(),
                    kept_in: into.to_string(),
                    why: format!("duplicate of {into} ({why}), merged there"),
                });
            }
        }
        for a in self.accounted.iter_mut().filter(|a| a.kept_in == from) {
            a.kept_in = into.to_string();
        }
        let d = self.docs.get_mut(from).expect("doc");
        d.current = None;
        d.reasons.push(format!("duplicate of {into} ({why}); merged there and moved to the trash"));
        self.stats.merged += 1;
        let stem = from.rsplit('/').next().unwrap_or(from).trim_end_matches(".md").to_string();
        let linked: Vec<&str> = self
            .links
            .get(&stem)
            .map(|v| v.iter().filter(|r| self.docs.get(*r).is_some_and(|d| d.current.is_some())).map(String::as_str).collect())
            .unwrap_or_default();
        if !linked.is_empty() {
            self.notes.push(format!("[[{stem}]] in {} now names a merged memory; its content is in {into}", linked.join(", ")));
        }
    }

    // ---- Phase 4: the index -----------------------------------------------------------------

    fn doc_kind(&self, rel: &str) -> Option<MemoryType> {
        let d = self.docs.get(rel)?;
        match &d.current {
            Some(c) if d.changed() => frontmatter::parse(c).frontmatter.and_then(|f| f.memory_type()),
            _ => d.kind,
        }
    }

    fn doc_recency(&self, rel: &str) -> i128 {
        match self.docs.get(rel) {
            // A memory written back from its index line is as old as the line.
            Some(d) if d.changed() && d.original.is_some() => ns_since_epoch(self.opts.now),
            Some(d) => d.mtime_ns,
            None => 0,
        }
    }

    fn reindex(&mut self, merged_into: &HashMap<String, String>) -> Result<Option<IndexChange>, DreamError> {
        let (bytes, _) = match self.memdir.read_raw(INDEX_FILE) {
            Ok(found) => found,
            Err(mneme_store::memdir::MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                (None, mneme_store::memdir::Revision::ABSENT)
            }
            Err(e) => return Err(e.into()),
        };
        let original = match bytes.map(String::from_utf8) {
            None => None,
            Some(Ok(s)) => Some(s),
            Some(Err(_)) => {
                self.notes.push("MEMORY.md is not UTF-8, so its index lines were left as they are".into());
                return Ok(None);
            }
        };
        let root = self.memdir.root().to_path_buf();
        // Its lines as the release the dream works for reads them: from 2.1.284 a lone CR ends
        // a line, so each entry is found on its own line and written back with its own end.
        let release = *self.memdir.release();
        let text = original.as_deref().unwrap_or_default();
        let mut doc = IndexDoc::parse_as(text, &release);
        let mut reasons = Vec::new();

        // Lines for missing files are memories (see the module docs); repeats go once their
        // text is in the topic file (the first line for a file stays). A line for a
        // merged-away file is replaced by the survivor's line when the survivor has none.
        let mut indexed: HashSet<String> = HashSet::new();
        let mut drop = Vec::new();
        let mut replace: Vec<(usize, String)> = Vec::new();
        let entries = doc.entries(Scope::Private, &root);
        let pointed: HashSet<String> = entries.iter().map(|(_, e)| e.rel_path.clone()).collect();
        let mut renamed = self.unindexed_by_name(&pointed);
        let index_mtime = fs::metadata(self.memdir.root().join(INDEX_FILE))
            .and_then(|m| m.modified())
            .map_or_else(|_| ns_since_epoch(self.opts.now), ns_since_epoch);
        let (mut repointed, mut recreated, mut untyped, mut flagged) = (0, 0, Vec::new(), Vec::new());
        for (i, e) in &entries {
            if let Some(survivor) = merged_into.get(&e.rel_path) {
                self.accounted.push(Accounted {
                    file: INDEX_FILE.into(),
                    text: doc.lines[*i].text.clone(),
                    kept_in: survivor.clone(),
                    why: format!("the line of {}, a duplicate merged into {survivor}", e.rel_path),
                });
                if !pointed.contains(survivor) && indexed.insert(survivor.clone()) {
                    replace.push((*i, self.entry_line(survivor)));
                } else {
                    drop.push(*i);
                }
                continue;
            }
            if !self.exists(&e.rel_path) {
                let stem = e.rel_path.rsplit('/').next().unwrap_or(&e.rel_path).trim_end_matches(".md");
                if let Some(to) = renamed.remove(&slugify(stem)) {
                    let line = &doc.lines[*i].text;
                    doc.lines[*i].text = match line.find(&format!("]({})", e.target)) {
                        Some(_) if !to.contains([' ', '(', ')', '<', '>', '%']) => line.replacen(&format!("]({})", e.target), &format!("]({to})"), 1),
                        _ => render_entry(&e.title, &to, Scope::Private, e.hook.as_deref()),
                    };
                    indexed.insert(to);
                    repointed += 1;
                    continue;
                }
                match self.recreate(e, index_mtime) {
                    Ok(typed) => {
                        if !typed {
                            untyped.push(e.rel_path.clone());
                        }
                        indexed.insert(e.rel_path.clone());
                        recreated += 1;
                    }
                    Err(why) => flagged.push(format!("line {} ({}): {why}", i + 1, e.rel_path)),
                }
                continue;
            }
            if !indexed.insert(e.rel_path.clone()) && self.carry_repeat(e) {
                drop.push(*i);
            }
        }
        for (i, line) in &replace {
            doc.lines[*i].text = line.clone();
        }
        let removed = doc.remove(&drop);
        if !replace.is_empty() {
            reasons.push(format!("pointed {} line(s) at the memories duplicates were merged into", replace.len()));
        }
        if repointed > 0 {
            reasons.push(format!("pointed {repointed} line(s) whose file was missing at the memory of the same name"));
            self.stats.index_repointed += repointed;
        }
        if recreated > 0 {
            reasons.push(format!("its {recreated} line(s) whose file was missing now have one, written from the line"));
            self.stats.index_recreated += recreated;
        }
        if !untyped.is_empty() {
            self.notes.push(format!(
                "{} written back from MEMORY.md {} no type, because the file name does not start with user_, feedback_, project_ or reference_: review {} and set one ({})",
                if untyped.len() == 1 { "1 memory".to_string() } else { format!("{} memories", untyped.len()) },
                if untyped.len() == 1 { "has" } else { "have" },
                if untyped.len() == 1 { "it" } else { "them" },
                untyped.join(", ")
            ));
        }
        if !flagged.is_empty() {
            self.stats.index_dangling += flagged.len();
            self.notes.push(format!(
                "MEMORY.md still points at {} missing {}, kept as {} (Claude Code loads the text): {}",
                flagged.len(),
                if flagged.len() == 1 { "file" } else { "files" },
                if flagged.len() == 1 { "it is" } else { "they are" },
                flagged.join("; ")
            ));
        }
        if !removed.is_empty() {
            reasons.push(format!("dropped {} repeated line(s), their text kept in the topic file", removed.len()));
            self.stats.index_removed += removed.len();
        }

        // Topic files nobody indexed (daily logs are not indexed; team files have their own;
        // entries an earlier dream moved to the overflow file count as indexed there, or every
        // dream would bring them back only to move them out again).
        let mut team_indexed = self.team_linked.clone();
        if let Some(overflow) = self.docs.get(OVERFLOW_FILE).and_then(|d| d.current.as_deref()) {
            team_indexed.extend(parse_index(split_frontmatter(overflow).1, Scope::Private, &root).into_iter().filter_map(|l| l.entry).map(|e| e.rel_path));
            team_indexed.insert(OVERFLOW_FILE.to_string());
        }
        let missing: Vec<String> = self
            .editable()
            .map(|(r, _)| r.clone())
            .filter(|r| !indexed.contains(r) && !team_indexed.contains(r))
            .collect();
        if !missing.is_empty() {
            // One insertion after the last line with text, as `IndexDoc::append` places each.
            let crlf = doc.crlf();
            let at = doc.lines.iter().rposition(|l| !l.text.trim().is_empty()).map_or(0, |k| k + 1);
            let new: Vec<_> = missing.iter().map(|rel| mneme_store::memdir::DocLine { text: self.entry_line(rel), crlf }).collect();
            if doc.lines.is_empty() {
                doc.trailing_newline = true;
            }
            doc.lines.splice(at..at, new);
        }
        if !missing.is_empty() {
            reasons.push(format!("added {} line(s) for memories without one", missing.len()));
            self.stats.index_added += missing.len();
        }

        // Long lines: the detail moves into the topic file, the line keeps a short hook.
        let mut shortened = 0;
        for (i, e) in doc.entries(Scope::Private, &root) {
            let line = doc.lines[i].text.clone();
            if utf16_len(&line) <= LONG_INDEX_LINE_UNITS {
                continue;
            }
            let Some(hook) = e.hook.clone() else { continue };
            let Some(at) = line.rfind(hook.as_str()) else { continue };
            let prefix = &line[..at];
            let budget = TARGET_INDEX_LINE_UNITS.saturating_sub(utf16_len(prefix));
            if budget < 20 || !self.docs.get(&e.rel_path).is_some_and(|d| d.editable && d.current.is_some()) {
                continue;
            }
            let topic = self.docs.get_mut(&e.rel_path).expect("checked");
            let text = topic.current.clone().unwrap_or_default();
            if !similar::normalized(&text).contains(&similar::normalized(&hook)) {
                let mut t = text.trim_end_matches('\n').to_string();
                t.push_str(&format!("\n\n{hook}\n"));
                topic.current = Some(t);
                topic.reasons.push("took the detail of its over-long MEMORY.md line".into());
            }
            doc.lines[i].text = format!("{prefix}{}", shorten(&hook, budget));
            shortened += 1;
        }
        if shortened > 0 {
            reasons.push(format!("shortened {shortened} line(s) over ~200 characters (detail moved into the topic files)"));
            self.stats.index_shortened += shortened;
        }

        // The cap: feedback first, then the most recent, are the entries Claude Code loads; the
        // rest move to the overflow file.
        let (overflowed, entries_moved) = self.fit_cap(&mut doc, &root, text);
        if overflowed > 0 {
            reasons.push(format!(
                "moved {overflowed} line(s) past Claude Code's 200-line / 25,000-character cut ({entries_moved} older non-feedback entries) into {OVERFLOW_FILE}, linked from the last line"
            ));
            self.stats.index_overflowed += overflowed;
            self.stats.index_demoted += entries_moved;
        }

        let rendered = doc.render_as(text, &release);
        if original.as_deref() == Some(rendered.as_str()) || (original.is_none() && rendered.is_empty()) {
            return Ok(None);
        }
        Ok(Some((original, rendered, reasons)))
    }

    /// Editable memories no index line points at, by the slug of their `name:` (and of their
    /// file name), for lines whose file was renamed. Names two memories share are left out.
    fn unindexed_by_name(&self, pointed: &HashSet<String>) -> HashMap<String, String> {
        let mut by: HashMap<String, Option<String>> = HashMap::new();
        for (rel, d) in self.editable() {
            if pointed.contains(rel) || self.team_linked.contains(rel) || rel == OVERFLOW_FILE || d.original.is_none() {
                continue;
            }
            let (name, _) = header_fields(d.current.as_deref().unwrap_or_default(), rel);
            let mut keys = vec![slugify(&name)];
            let stem = rel.rsplit('/').next().unwrap_or(rel).trim_end_matches(".md");
            keys.push(slugify(stem));
            keys.dedup();
            for k in keys.into_iter().filter(|k| !k.is_empty()) {
                by.entry(k).and_modify(|v| {
                    if v.as_deref() != Some(rel.as_str()) {
                        *v = None
                    }
                }).or_insert_with(|| Some(rel.clone()));
            }
        }
        by.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect()
    }

    /// Writes the memory a line points at back from the line, when it can live at that path.
    /// Returns whether its type could be told from the file name.
    fn recreate(&mut self, e: &mneme_store::memdir::IndexEntry, mtime_ns: i128) -> Result<bool, CannotRecreate> {
        let rel = e.rel_path.as_str();
        if !rel.ends_with(".md") {
            return Err(CannotRecreate::NotMarkdown);
        }
        if Scope::of(rel) == Scope::Team {
            return Err(CannotRecreate::TeamFolder);
        }
        if rel.starts_with("logs/") || rel == INDEX_FILE || rel == OVERFLOW_FILE {
            return Err(CannotRecreate::Reserved);
        }
        if rel.split('/').any(|part| part.starts_with('.')) {
            return Err(CannotRecreate::Hidden);
        }
        // A path no file can have (a decoded line break, a name over 255 bytes) or one under
        // a file would fail when applied, and so fail every dream after it.
        if let Err(e) = mneme_store::memdir::validate_topic_path(rel) {
            return Err(CannotRecreate::BadPath(e.to_string()));
        }
        let mut folder = self.memdir.root().to_path_buf();
        for part in rel.split('/').take(rel.split('/').count() - 1) {
            folder.push(part);
            if std::fs::symlink_metadata(&folder).is_ok_and(|m| !m.is_dir()) {
                return Err(CannotRecreate::UnderAFile(part.to_string()));
            }
        }
        let stem = rel.rsplit('/').next().unwrap_or(rel).trim_end_matches(".md");
        let kind = [MemoryType::User, MemoryType::Feedback, MemoryType::Project, MemoryType::Reference]
            .into_iter()
            .find(|t| stem.strip_prefix(t.as_str()).is_some_and(|rest| rest.starts_with(['_', '-'])));
        // Markdown escapes in the link text are not part of the name.
        let title = e.title.replace("\\\\", "\u{0}").replace('\\', "").replace('\u{0}', "\\");
        let hook = e.hook.clone().filter(|h| !h.trim().is_empty());
        let name = if title.trim().is_empty() { stem.to_string() } else { title.trim().to_string() };
        let description = shorten(hook.as_deref().unwrap_or(&name), TARGET_INDEX_LINE_UNITS);
        let day = iso(self.local_date_of(ns_since_epoch(self.opts.now)));
        let body = format!(
            "{}\n\nWritten back by a Mneme dream on {day} from this memory's line in MEMORY.md: the file the line pointed at was missing.",
            hook.as_deref().unwrap_or(&name).trim()
        );
        let content = new_memory_content(&name, &description, kind, &body, self.memdir.type_form());
        let mut reasons = vec!["written back from its MEMORY.md line: the file the line pointed at was missing".to_string()];
        if kind.is_none() {
            reasons.push("no type could be told from the file name; review it and set one".into());
        }
        self.docs.insert(
            rel.to_string(),
            Doc { original: None, current: Some(content), kind, mtime_ns, editable: true, unreadable: false, reasons },
        );
        Ok(kind.is_some())
    }

    /// Before a repeated line goes, the parts of it the topic file does not say yet are added
    /// to the topic file. Returns whether the line may go: not when the topic file cannot be
    /// edited (a link, not UTF-8, a daily log), since what the repeat says would then be lost.
    fn carry_repeat(&mut self, e: &mneme_store::memdir::IndexEntry) -> bool {
        let Some(d) = self.docs.get_mut(&e.rel_path).filter(|d| d.editable && d.current.is_some()) else {
            return false;
        };
        let text = d.current.clone().unwrap_or_default();
        let have = format!(" {} ", safety::words(&text).join(" "));
        let missing: Vec<&str> = std::iter::once(e.title.as_str())
            .chain(e.hook.as_deref())
            .filter(|p| {
                let w = safety::words(p);
                !w.is_empty() && !have.contains(&format!(" {} ", w.join(" ")))
            })
            .collect();
        if !missing.is_empty() {
            let mut t = text.trim_end_matches('\n').to_string();
            t.push_str(&format!("\n\n{}\n", missing.join(" — ")));
            d.current = Some(t);
            d.reasons.push("took the text of a repeated MEMORY.md line".into());
        }
        true
    }

    fn entry_line(&self, rel: &str) -> String {
        let c = self.docs.get(rel).and_then(|d| d.current.clone()).unwrap_or_default();
        let (name, desc) = header_fields(&c, rel);
        let hook = (!desc.trim().is_empty()).then(|| shorten(&desc, TARGET_INDEX_LINE_UNITS.saturating_sub(utf16_len(&name) + rel.len() + 10).max(40)));
        render_entry(&name, rel, Scope::Private, hook.as_deref())
    }

    /// Makes `MEMORY.md` fit Claude Code's cap. The entries that matter most (feedback first,
    /// then the most recently written) stay where they are, with every line that is not an
    /// entry; the rest move, in their order, into [`OVERFLOW_FILE`], which the last line of the
    /// index links to. If the lines that are not entries alone are too long, the ones past
    /// the cut move too. Returns how many lines moved (entries among them in the second value).
    ///
    /// The cap is measured on the text as it will be written (`original` is the index it was
    /// parsed from, see [`IndexDoc::render_as`]): from 2.1.284 a lone CR ends a line for the
    /// model but counts no line towards the 200, so an index of lone CRs measured with each
    /// one made LF would lose entries Claude Code loads.
    fn fit_cap(&mut self, doc: &mut IndexDoc, root: &Path, original: &str) -> (usize, usize) {
        let release = *self.memdir.release();
        if loaded_index_lines_as(&doc.render_as(original, &release), &release).iter().all(|f| *f) {
            return (0, 0);
        }
        // The lines move into the overflow file; one that is there but cannot be edited (a
        // link, not UTF-8) would be overwritten by a plan that thinks it new, and fail.
        let overflow_usable = match self.docs.get(OVERFLOW_FILE) {
            Some(d) => d.editable && d.current.is_some(),
            None => std::fs::symlink_metadata(root.join(OVERFLOW_FILE)).is_err(),
        };
        if !overflow_usable {
            self.notes.push(format!(
                "MEMORY.md is longer than Claude Code loads, but {OVERFLOW_FILE} cannot be edited (a link, or not UTF-8), so no lines were moved into it; fix or remove that file"
            ));
            return (0, 0);
        }
        let own: Vec<usize> =
            doc.entries(Scope::Private, root).into_iter().filter(|(_, e)| e.rel_path == OVERFLOW_FILE).map(|(i, _)| i).collect();
        doc.remove(&own);
        let link = mneme_store::memdir::DocLine {
            text: render_entry(OVERFLOW_NAME, OVERFLOW_FILE, Scope::Private, Some(OVERFLOW_HOOK)),
            crlf: doc.crlf(),
        };
        // Each line's end as the fitted index will be written, the link's last: rendered once,
        // as rendering each candidate would diff it against `original` again.
        let mut probe = doc.clone();
        probe.lines.push(link.clone());
        probe.trailing_newline = true;
        let ends = line_ends(&probe, &probe.render_as(original, &release));
        let entries = doc.entries(Scope::Private, root);
        let entry_lines: HashSet<usize> = entries.iter().map(|(i, _)| *i).collect();
        let mut ranked: Vec<(usize, bool, i128)> = entries
            .iter()
            .map(|(i, e)| (*i, self.doc_kind(&e.rel_path) == Some(MemoryType::Feedback), self.doc_recency(&e.rel_path)))
            .collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
        // The lines of the index with the `k` most important entries and every other line, in
        // file order (the link follows them); `cut` more lines (from the end) moved out when
        // even that is too long.
        let build = |k: usize, cut: usize| -> Vec<usize> {
            let keep: HashSet<usize> = ranked[..k].iter().map(|r| r.0).collect();
            let mut kept: Vec<usize> = (0..doc.lines.len()).filter(|i| !entry_lines.contains(i) || keep.contains(i)).collect();
            kept.truncate(kept.len().saturating_sub(cut));
            while kept.last().is_some_and(|&i| doc.lines[i].text.trim().is_empty()) {
                kept.pop();
            }
            kept
        };
        // The candidate's text with those ends (for an index with no lone CR, its `render()`).
        let link_end = ends.last().copied().unwrap_or("\n");
        let fits = |kept: &[usize]| {
            let mut text = String::new();
            for &i in kept {
                text.push_str(&doc.lines[i].text);
                text.push_str(ends.get(i).copied().unwrap_or("\n"));
            }
            text.push_str(&link.text);
            text.push_str(link_end);
            loaded_index_lines_as(&text, &release).iter().all(|f| *f)
        };
        let (mut lo, mut hi) = (0usize, ranked.len());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(&build(mid, 0)) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        // The fewest lines to cut from the end, by halves (one at a time re-measured the whole
        // index per line: minutes for a 50,000-line MEMORY.md of prose).
        let done = |cut: usize| {
            let kept = build(lo, cut);
            fits(&kept) || kept.is_empty()
        };
        let (mut c_lo, mut c_hi) = (0usize, doc.lines.len());
        while c_lo < c_hi {
            let mid = (c_lo + c_hi) / 2;
            if done(mid) {
                c_hi = mid;
            } else {
                c_lo = mid + 1;
            }
        }
        let kept = build(lo, c_lo);
        let mut lines: Vec<_> = kept.iter().map(|&i| doc.lines[i].clone()).collect();
        lines.push(link.clone());
        let fitted = IndexDoc { lines, trailing_newline: true };
        let kept: HashSet<usize> = kept.into_iter().collect();
        let moved: Vec<&str> = (0..doc.lines.len()).filter(|i| !kept.contains(i)).map(|i| doc.lines[i].text.as_str()).collect();
        let start = moved.iter().position(|l| !l.trim().is_empty()).unwrap_or(moved.len());
        let end = moved.iter().rposition(|l| !l.trim().is_empty()).map_or(start, |e| e + 1);
        let moved = &moved[start..end];
        let count = moved.iter().filter(|l| !l.trim().is_empty()).count();
        let moved_entries = ranked.len() - lo;
        let block = format!(
            "## Moved from MEMORY.md on {}\n\n{}\n",
            iso(self.local_date_of(ns_since_epoch(self.opts.now))),
            moved.join("\n")
        );
        *doc = fitted;
        match self.docs.get_mut(OVERFLOW_FILE) {
            Some(d) if d.editable && d.current.is_some() => {
                let mut t = d.current.take().unwrap_or_default().trim_end_matches('\n').to_string();
                t.push_str("\n\n");
                t.push_str(&block);
                d.current = Some(t);
                d.reasons.push(format!("took {count} index line(s) that fell past MEMORY.md's cap"));
            }
            _ => {
                let content = new_memory_content(OVERFLOW_NAME, OVERFLOW_HOOK, Some(MemoryType::Reference), &block, self.memdir.type_form());
                let now = ns_since_epoch(self.opts.now);
                self.docs.insert(
                    OVERFLOW_FILE.to_string(),
                    Doc {
                        original: None,
                        current: Some(content),
                        kind: Some(MemoryType::Reference),
                        mtime_ns: now,
                        editable: true,
                        unreadable: false,
                        reasons: vec![format!("new: the {count} index line(s) that fell past MEMORY.md's cap")],
                    },
                );
            }
        }
        (count, moved_entries)
    }

    fn into_plan(self, index: Option<IndexChange>) -> Plan {
        let root = self.memdir.root().to_path_buf();
        let abs = |rel: &str| rel.split('/').fold(root.clone(), |p: PathBuf, s| p.join(s));
        let mut changes = Vec::new();
        let mut removals = Vec::new();
        for (rel, d) in &self.docs {
            if !d.changed() {
                continue;
            }
            let change = FileChange {
                path: abs(rel),
                before: d.original.clone(),
                after: d.current.clone(),
                reason: format!("{rel}: {}", d.reasons.join("; ")),
                extra: Default::default(),
            };
            if d.current.is_none() {
                removals.push(change);
            } else {
                changes.push(change);
            }
        }
        changes.extend(removals);
        if let Some((before, after, reasons)) = index {
            changes.push(FileChange { path: abs(INDEX_FILE), before, after: Some(after), reason: format!("MEMORY.md: {}", reasons.join("; ")), extra: Default::default() });
        }
        let s = &self.stats;
        let mut parts = Vec::new();
        let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        if s.distilled > 0 {
            parts.push(format!("distilled {} from the daily logs", plural(s.distilled, "fact", "facts")));
        }
        if s.merged > 0 {
            parts.push(format!("merged {}", plural(s.merged, "duplicate memory", "duplicate memories")));
        }
        if s.dated > 0 {
            parts.push(format!("made relative dates absolute in {}", plural(s.dated, "memory", "memories")));
        }
        let mut idx = Vec::new();
        if s.index_added > 0 {
            idx.push(format!("added {}", plural(s.index_added, "line", "lines")));
        }
        if s.index_recreated > 0 {
            idx.push(format!(
                "wrote back {} from {} whose file was missing",
                plural(s.index_recreated, "memory", "memories"),
                if s.index_recreated == 1 { "its line" } else { "their lines" }
            ));
        }
        if s.index_repointed > 0 {
            idx.push(format!("pointed {} at renamed memories", plural(s.index_repointed, "line", "lines")));
        }
        if s.index_removed > 0 {
            idx.push(format!("dropped {} (text kept in the topic files)", plural(s.index_removed, "repeated line", "repeated lines")));
        }
        if s.index_shortened > 0 {
            idx.push(format!("shortened {}", plural(s.index_shortened, "long line", "long lines")));
        }
        if s.index_overflowed > 0 {
            idx.push(format!(
                "moved {} ({}) past the cap into {OVERFLOW_FILE}",
                plural(s.index_overflowed, "line", "lines"),
                plural(s.index_demoted, "older entry", "older entries")
            ));
        }
        if !idx.is_empty() {
            parts.push(format!("MEMORY.md: {}", idx.join(", ")));
        }
        let summary = if changes.is_empty() {
            "Nothing to consolidate: the memories are already tight.".to_string()
        } else {
            let mut t = parts.join("; ");
            if let Some(first) = t.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            format!("{t}.")
        };
        Plan { changeset: Changeset { root, changes, extra: Default::default() }, notes: self.notes, stats: self.stats, summary, accounted: self.accounted }
    }
}

/// The line end `rendered` (the text of `doc`, each line's text as it is in `doc`) gives each
/// line of `doc`: `\r\n`, `\n`, a lone `\r`, or nothing after the last.
fn line_ends(doc: &IndexDoc, rendered: &str) -> Vec<&'static str> {
    let mut rest = rendered;
    // `render_as` keeps a byte-order mark at the top of the file even when the line that
    // carried it is gone.
    if !doc.lines.first().is_some_and(|l| l.text.starts_with('\u{FEFF}')) {
        rest = rest.strip_prefix('\u{FEFF}').unwrap_or(rest);
    }
    doc.lines
        .iter()
        .map(|l| {
            rest = rest.strip_prefix(l.text.as_str()).unwrap_or(rest);
            let end = ["\r\n", "\n", "\r"].into_iter().find(|e| rest.starts_with(e)).unwrap_or("");
            rest = &rest[end.len()..];
            end
        })
        .collect()
}

/// Absolutizes the `description:` value of a frontmatter block when it is a plain one-line
/// scalar, and only if the block still parses to the same fields apart from that value.
fn absolutize_description(head: &str, on: time::Date) -> (String, Vec<dates::Conversion>) {
    let Some(pos) = head.find("\ndescription:").map(|p| p + 1) else { return (head.to_string(), Vec::new()) };
    let end = head[pos..].find('\n').map_or(head.len(), |e| pos + e);
    let line = head[pos..end].trim_end_matches('\r');
    let value = line["description:".len()..].trim();
    if value.is_empty() || value.starts_with(['"', '\'', '|', '>', '[', '{']) {
        return (head.to_string(), Vec::new());
    }
    let (new_value, done) = dates::absolutize(value, on);
    if done.is_empty() {
        return (head.to_string(), Vec::new());
    }
    let new_line = line.replacen(value, &new_value, 1);
    let candidate = format!("{}{}{}", &head[..pos], new_line, &head[pos + line.len()..]);
    let before = frontmatter::parse(head).frontmatter;
    let after = frontmatter::parse(&candidate).frontmatter;
    let same_rest = match (&before, &after) {
        (Some(b), Some(a)) => b.name() == a.name() && b.memory_type() == a.memory_type() && a.error.is_none(),
        _ => false,
    };
    if same_rest && after.as_ref().and_then(|a| a.description()).as_deref() == Some(new_value.as_str()) {
        (candidate, done)
    } else {
        (head.to_string(), Vec::new())
    }
}

/// Plans an offline dream of `memdir`. Reads only; apply the plan's changeset to make it so.
pub fn consolidate(memdir: &Memdir, opts: OfflineOptions) -> Result<Plan, DreamError> {
    let mut w = Work::load(memdir, opts)?;
    w.distil_logs();
    w.absolutize_dates();
    let merged = w.merge_duplicates();
    let index = w.reindex(&merged)?;
    Ok(w.into_plan(index))
}

/// Why a dangling index line cannot be written back as its own topic file (it stays in the
/// index, flagged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum CannotRecreate {
    #[error("not a Markdown file")]
    NotMarkdown,
    #[error("it would be in the team's folder, which a dream does not write")]
    TeamFolder,
    #[error("that path is kept for Mneme's and Claude Code's own files")]
    Reserved,
    #[error("a hidden path")]
    Hidden,
    #[error("{0}")]
    BadPath(String),
    #[error("\"{0}\" is a file, not a folder")]
    UnderAFile(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;
    use mneme_store::memdir::loaded_index_lines;
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};

    /// 2026-05-06 12:00 UTC, a Wednesday.
    const NOW: u64 = 1_778_068_800;

    struct T {
        d: tempfile::TempDir,
    }

    impl T {
        fn new() -> T {
            let t = T { d: tempfile::tempdir().unwrap() };
            fs::create_dir_all(t.mem()).unwrap();
            t
        }
        fn mem(&self) -> PathBuf {
            self.d.path().join("memory")
        }
        fn write(&self, rel: &str, text: &str, mtime: u64) {
            let p = self.mem().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, text).unwrap();
            filetime::set_file_mtime(&p, filetime::FileTime::from_unix_time(mtime as i64, 0)).unwrap();
        }
        fn plan(&self, since: Option<u64>) -> Plan {
            let m = Memdir::new(self.mem(), self.d.path().join("trash"), Arc::new(FixedClock::at_unix_secs(NOW)));
            consolidate(
                &m,
                OfflineOptions {
                    zone: LocalZone::Fixed(0),
                    since: since.map(|s| UNIX_EPOCH + Duration::from_secs(s)),
                    now: UNIX_EPOCH + Duration::from_secs(NOW),
                },
            )
            .unwrap()
        }
    }

    fn change<'p>(p: &'p Plan, rel: &str) -> &'p FileChange {
        p.changeset.changes.iter().find(|c| c.path.ends_with(rel)).unwrap_or_else(|| panic!("no change for {rel}: {p:#?}"))
    }

    fn topic(name: &str, desc: &str, kind: &str, body: &str) -> String {
        format!("---\nname: {name}\ndescription: {desc}\ntype: {kind}\n---\n\n{body}\n")
    }

    #[test]
    fn a_tidy_folder_gives_an_empty_changeset() {
        let t = T::new();
        t.write("a.md", &topic("Alpha", "first", "user", "Alpha fact."), NOW - 100);
        t.write("MEMORY.md", "- [Alpha](a.md) — first\n", NOW - 100);
        let p = t.plan(None);
        assert!(p.changeset.changes.is_empty(), "{p:#?}");
        assert_eq!(p.summary, "Nothing to consolidate: the memories are already tight.");
    }

    #[test]
    fn duplicates_merge_into_the_newest_keeping_every_distinct_line() {
        let t = T::new();
        t.write("tabs_old.md", &topic("Prefers tabs", "Use tabs for indentation", "feedback", "Always indent with tabs.\n**Why:** team style."), NOW - 9000);
        t.write("tabs_new.md", &topic("Tabs preference", "Use tabs for indentation in code", "feedback", "Always indent with tabs, never spaces.\n**Why:** team style."), NOW - 100);
        t.write("other.md", &topic("Prefers tabs", "Use tabs for indentation", "project", "Different type: not merged."), NOW - 50);
        t.write("MEMORY.md", "- [Old](tabs_old.md) — tabs\n- [New](tabs_new.md) — tabs\n- [Other](other.md) — x\n", NOW - 100);
        let p = t.plan(None);
        let old = change(&p, "tabs_old.md");
        assert_eq!(old.after, None, "the older one goes to the trash");
        assert!(old.before.as_deref().unwrap().contains("Always indent with tabs."));
        let new = change(&p, "tabs_new.md").after.as_deref().unwrap();
        assert!(new.ends_with("**Why:** team style.\n\nAlways indent with tabs.\n"), "{new}");
        assert_eq!(change(&p, "MEMORY.md").after.as_deref(), Some("- [New](tabs_new.md) — tabs\n- [Other](other.md) — x\n"));
        assert_eq!(p.stats.merged, 1);
        assert!(p.summary.starts_with("Merged 1 duplicate memory"), "{}", p.summary);
        assert_nothing_lost(&t, &p);
    }

    /// Duplicates found by their bodies alone may differ in what their descriptions say: the
    /// merged-away one's description goes into the survivor, so nothing it said is lost.
    #[test]
    fn a_merged_duplicate_keeps_a_description_the_survivor_does_not_say() {
        let t = T::new();
        let body = "Run the whole suite before pushing.\n**Why:** staging deploys whatever lands.";
        t.write("a.md", &topic("Tests", "Run the tests before pushing", "feedback", body), NOW - 9000);
        t.write("b.md", &topic("Freeze", "Deploy freeze on Fridays", "feedback", body), NOW - 100);
        t.write("MEMORY.md", "- [Tests](a.md) — tests\n- [Freeze](b.md) — freeze\n", NOW - 100);
        let p = t.plan(None);
        let (gone, kept) = if change(&p, "a.md").after.is_none() { ("a.md", "b.md") } else { ("b.md", "a.md") };
        assert_eq!(change(&p, gone).after, None);
        let desc = if gone == "a.md" { "Run the tests before pushing" } else { "Deploy freeze on Fridays" };
        assert!(change(&p, kept).after.as_deref().unwrap().contains(desc), "{:#?}", p.changeset.changes);
        assert_nothing_lost(&t, &p);
    }

    #[test]
    fn relative_dates_use_the_memorys_own_date() {
        let t = T::new();
        // mtime is May 1st; `created:` wins when present.
        let may1 = NOW - 5 * 86400;
        t.write("a.md", &topic("A", "deployed yesterday", "project", "Shipped yesterday; next Monday we review."), may1);
        t.write("b.md", "---\nname: B\ndescription: b\ncreated: 2026-04-20\ntype: project\n---\nFroze the API 2 days ago.\n", may1);
        t.write("MEMORY.md", "- [A](a.md) — a\n- [B](b.md) — b\n", may1);
        let p = t.plan(None);
        let a = change(&p, "a.md");
        assert_eq!(a.after.as_deref(), Some("---\nname: A\ndescription: deployed on 2026-04-30\ntype: project\n---\n\nShipped on 2026-04-30; on 2026-05-04 we review.\n"));
        assert!(a.reason.contains("against 2026-05-01 (yesterday → on 2026-04-30"), "{}", a.reason);
        assert!(change(&p, "b.md").after.as_deref().unwrap().ends_with("Froze the API on 2026-04-18.\n"));
        assert_nothing_lost(&t, &p);
    }

    /// The plan passes the safety net: every line it removes is found in the folder after it.
    fn assert_nothing_lost(t: &T, p: &Plan) {
        // The release `plan` worked for: a `Memdir::new`'s, the newest.
        let moved = crate::safety::check(&p.changeset, &p.accounted, &mneme_core::versions::newest());
        let lost: Vec<_> = moved.iter().filter(|m| m.lost()).collect();
        assert!(lost.is_empty(), "{lost:#?}");
        let _ = t;
    }

    #[test]
    fn the_index_keeps_lines_for_missing_files_as_memories_gains_missing_ones_and_shortens_long_ones() {
        let t = T::new();
        let long_hook = format!("{} end", "detail ".repeat(40));
        t.write("a.md", &topic("A", "a", "user", "A body."), NOW - 10);
        t.write("b.md", &topic("Bee", "the b memory", "reference", "B body."), NOW - 10);
        t.write("feedback-finish-plans.md", &topic("finish-plans", "finish approved plans", "feedback", "Finish the whole plan."), NOW - 10);
        t.write("logs/2026/05/2026-05-05.md", "- 10:00 ran tests\n", NOW - 10);
        t.write("team/t.md", "team", NOW - 10);
        t.write(
            "MEMORY.md",
            &format!(
                "# Index\n- [A](a.md) — {long_hook}\n- [Jane](gone.md) — CLOSED — DO NOT CONTACT\n- [A again](a.md) — also alpha\n- [Tabs](feedback_tabs.md) — always tabs\n- [Finish plans](finish-plans.md) — finish what was approved\n- [Shared](team/x.md) — the team's\n"
            ),
            NOW - 10,
        );
        let p = t.plan(None);
        let idx = change(&p, "MEMORY.md").after.as_deref().unwrap();
        let lines: Vec<&str> = idx.lines().collect();
        assert_eq!(lines[0], "# Index");
        assert!(lines[1].starts_with("- [A](a.md) — detail detail") && lines[1].ends_with('…'), "{}", lines[1]);
        assert!(utf16_len(lines[1]) <= TARGET_INDEX_LINE_UNITS);
        assert_eq!(
            lines[2..].to_vec(),
            [
                "- [Jane](gone.md) — CLOSED — DO NOT CONTACT",
                "- [Tabs](feedback_tabs.md) — always tabs",
                "- [Finish plans](feedback-finish-plans.md) — finish what was approved",
                "- [Shared](team/x.md) — the team's",
                "- [Bee](b.md) — the b memory",
            ],
            "{idx}"
        );
        let a = change(&p, "a.md").after.as_deref().unwrap();
        assert!(a.contains(&format!("{long_hook}\n")), "detail moved: {a}");
        assert!(a.contains("A again — also alpha\n"), "the repeat's text moved: {a}");
        // Lines for missing files are written back as memories, typed from the file name.
        let gone = change(&p, "gone.md");
        assert_eq!(gone.before, None);
        let text = gone.after.as_deref().unwrap();
        assert!(text.starts_with("---\nname: Jane\ndescription: CLOSED — DO NOT CONTACT\n---\n\nCLOSED — DO NOT CONTACT\n\nWritten back"), "{text}");
        let tabs = change(&p, "feedback_tabs.md").after.as_deref().unwrap();
        assert!(tabs.contains("  type: feedback\n"), "{tabs}");
        assert_eq!((p.stats.index_recreated, p.stats.index_repointed, p.stats.index_dangling, p.stats.index_removed), (2, 1, 1, 1));
        assert!(p.notes.iter().any(|n| n.contains("1 memory written back from MEMORY.md has no type") && n.contains("gone.md")), "{:?}", p.notes);
        assert!(p.notes.iter().any(|n| n.contains("team/x.md") && n.contains("team's folder")), "{:?}", p.notes);
        assert!(p.summary.contains("wrote back 2 memories from their lines whose file was missing"), "{}", p.summary);
        assert!(!p.changeset.changes.iter().any(|c| c.path.to_string_lossy().contains("logs/") || c.path.to_string_lossy().contains("team/")));
        assert_nothing_lost(&t, &p);
    }

    #[test]
    fn past_the_cap_feedback_and_recent_entries_stay_and_the_rest_move_out() {
        let t = T::new();
        let mut index = String::from("# Index\n");
        // 230 entries: the 10 feedback memories are the oldest, yet they must stay loaded;
        // the oldest project entries move to the overflow file.
        for i in 0..230u64 {
            let kind = if i < 10 { "feedback" } else { "project" };
            let rel = format!("m{i:03}.md");
            t.write(&rel, &topic(&format!("M{i}"), &format!("d{i}"), kind, &format!("Body {i}.")), NOW - 100_000 + i * 10);
            index.push_str(&format!("- [M{i}]({rel}) — d{i}\n"));
        }
        t.write("MEMORY.md", &index, NOW);
        let p = t.plan(None);
        let after = change(&p, "MEMORY.md").after.clone().unwrap();
        assert!(loaded_index_lines(&after).iter().all(|f| *f), "within the caps");
        assert_eq!(after.lines().count(), 200);
        assert!(after.starts_with("# Index\n- [M0](m000.md) — d0\n"));
        assert!(after.ends_with(&format!("- [M229](m229.md) — d229\n- [{OVERFLOW_NAME}]({OVERFLOW_FILE}) — {OVERFLOW_HOOK}\n")));
        for i in (0..10).chain(42..230) {
            assert!(after.contains(&format!("(m{i:03}.md)")), "m{i:03} must stay in the index");
        }
        let overflow = change(&p, OVERFLOW_FILE);
        assert_eq!(overflow.before, None);
        let text = overflow.after.as_deref().unwrap();
        assert!(text.starts_with("---\nname: Older index entries\n"), "{text}");
        assert!(text.contains("## Moved from MEMORY.md on 2026-05-06\n\n- [M10](m010.md) — d10\n"), "{text}");
        for i in 10..42 {
            assert!(text.contains(&format!("(m{i:03}.md)")) && !after.contains(&format!("(m{i:03}.md)")), "m{i:03} moved");
        }
        assert_eq!((p.stats.index_overflowed, p.stats.index_demoted), (32, 32));
        assert_nothing_lost(&t, &p);
        // Dreaming again over the result changes nothing.
        fs::write(t.mem().join("MEMORY.md"), &after).unwrap();
        fs::write(t.mem().join(OVERFLOW_FILE), text).unwrap();
        let again = t.plan(None);
        assert!(again.changeset.changes.is_empty(), "{:#?}", again.changeset.changes.iter().map(|c| &c.reason).collect::<Vec<_>>());
    }

    #[test]
    fn an_index_of_prose_too_long_for_the_cap_moves_its_tail() {
        let t = T::new();
        let prose: String = (0..260).map(|i| format!("- fact {i} written straight into the index\n")).collect();
        t.write("MEMORY.md", &prose, NOW);
        let p = t.plan(None);
        let after = change(&p, "MEMORY.md").after.clone().unwrap();
        assert!(loaded_index_lines(&after).iter().all(|f| *f));
        assert!(after.contains("- fact 198 written") && !after.contains("- fact 199 written"), "{after}");
        let moved = change(&p, OVERFLOW_FILE).after.clone().unwrap();
        assert!(moved.contains("- fact 199 written") && moved.contains("- fact 259 written"));
        assert_nothing_lost(&t, &p);
    }

    #[test]
    fn a_vast_index_of_prose_is_cut_by_halves_and_an_overflow_file_that_cannot_be_edited_is_left_alone() {
        let t = T::new();
        let prose: String = (0..50_000).map(|i| format!("- fact {i} written straight into the index\n")).collect();
        t.write("MEMORY.md", &prose, NOW);
        let p = t.plan(None);
        let after = change(&p, "MEMORY.md").after.clone().unwrap();
        assert!(loaded_index_lines(&after).iter().all(|f| *f));
        assert!(after.contains("- fact 198 written") && !after.contains("- fact 199 written"));
        assert!(change(&p, OVERFLOW_FILE).after.as_deref().unwrap().contains("- fact 49999 written"));

        // The overflow file is a link: nothing is moved into it, and the plan says why.
        let t = T::new();
        t.write("MEMORY.md", &prose[..20_000], NOW);
        t.write("elsewhere.md", "x", NOW);
        std::os::unix::fs::symlink(t.mem().join("elsewhere.md"), t.mem().join(OVERFLOW_FILE)).unwrap();
        let p = t.plan(None);
        assert!(!p.changeset.changes.iter().any(|c| c.path.ends_with(OVERFLOW_FILE)), "{:#?}", p.changeset.changes);
        assert!(p.notes.iter().any(|n| n.contains("cannot be edited")), "{:?}", p.notes);
    }

    #[test]
    fn daily_logs_since_the_last_dream_become_memories() {
        let t = T::new();
        t.write("feedback_commits.md", &topic("Small commits", "keep commits small", "feedback", "Keep commits small and focused."), NOW - 86400 * 3);
        t.write("MEMORY.md", "- [Small commits](feedback_commits.md) — keep commits small\n", NOW - 86400 * 3);
        let log = "- 09:00 Always run cargo fmt before committing\n- 09:30 fixed the flaky test\n- 10:00 keep commits small and focused\n- 11:00 Release freeze starts tomorrow\n";
        t.write("logs/2026/05/2026-05-05.md", log, NOW - 3600);
        t.write("logs/2026/05/2026-05-01.md", "- 09:00 Never force-push to main\n", NOW - 86400 * 5);
        let p = t.plan(Some(NOW - 86400 * 2));
        assert_eq!(p.stats.distilled, 2, "{p:#?}");
        let fmt = change(&p, "feedback_always-run-cargo-fmt-before-committing.md");
        assert_eq!(fmt.before, None);
        let text = fmt.after.as_deref().unwrap();
        assert!(text.contains("type: feedback") && text.contains("Source: daily log logs/2026/05/2026-05-05.md (2026-05-05 09:00)."), "{text}");
        let freeze = p.changeset.changes.iter().find(|c| c.path.to_string_lossy().contains("project_release-freeze")).unwrap();
        assert!(freeze.after.as_deref().unwrap().contains("Release freeze starts on 2026-05-06"));
        let idx = change(&p, "MEMORY.md").after.as_deref().unwrap();
        assert!(idx.contains("(feedback_always-run-cargo-fmt-before-committing.md) — Always run cargo fmt before committing"), "{idx}");
        assert!(!p.changeset.changes.iter().any(|c| c.path.to_string_lossy().contains("logs/")), "logs untouched");
    }
}
