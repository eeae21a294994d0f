//! Mneme's own files (team sync state, dream records, provider and team settings, …) as one
//! build reads what another build wrote. People update Mneme, go back to an older build, or run
//! the app and a CLI of different builds side by side on one data folder, so each of those files
//! follows the same three rules, kept here once:
//!
//! - A field this build does not know is kept when it rewrites the file: [`Unknown`], flattened
//!   into the file's struct, or [`carry_unknown`] for a file written from a JSON object. Dropping
//!   it would lose what the newer build recorded there the first time this one saved.
//! - A file whose `version` is above the one this build reads is refused with [`NewerFormat`],
//!   which says to update Mneme, and is left as it is. A format's version goes up only when
//!   older builds would misread it, so reading it anyway, or starting afresh over it, would
//!   lose what the newer build keeps there. Fields added without a new version stay readable.
//! - An item of a list this build cannot read (a value a newer build added to an enum) does not
//!   make the rest unreadable: [`OpenList`] keeps it aside, unread and written back as it was.
//!
//! ARCHITECTURE.md ("Mneme's own files across versions") lists each file and how it holds up.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::ops::{Deref, DerefMut};

/// The fields of a file this build does not know, kept to be written back as they were. Put on
/// a struct as `#[serde(flatten, default, skip_serializing_if = "Map::is_empty")] extra: Unknown`.
pub type Unknown = Map<String, Value>;

/// A file written by a newer Mneme in a format this build does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("it was written by a newer Mneme (format {found}; this build reads format {supported} and older): update Mneme to use it; this build leaves it as it is")]
pub struct NewerFormat {
    /// The version the file says it is.
    pub found: u64,
    /// The newest version this build reads.
    pub supported: u64,
}

/// `Err` when a file of version `found` is newer than the `supported` format this build reads.
pub fn check_version(found: u64, supported: u64) -> Result<(), NewerFormat> {
    if found > supported {
        Err(NewerFormat { found, supported })
    } else {
        Ok(())
    }
}

/// The `version` field of a JSON object, read without parsing the rest as any build's format,
/// so a newer file is told apart before its other fields are held to this build's rules.
/// `None` when the text is not a JSON object or has no whole-number `version`.
pub fn version_of(json: &[u8]) -> Option<u64> {
    #[derive(Deserialize)]
    struct Head {
        version: Option<Value>,
    }
    serde_json::from_slice::<Head>(json).ok()?.version?.as_u64()
}

/// `check_version` on the `version` field of `json`: a file with none, or one that does not
/// parse, is left to the caller's own parse to report.
pub fn check_version_of(json: &[u8], supported: u64) -> Result<(), NewerFormat> {
    version_of(json).map_or(Ok(()), |found| check_version(found, supported))
}

/// A parse failure of one of Mneme's own files in words: serde's message, and when the value
/// was one this build does not know (a newer build added it to an enum), that updating Mneme
/// reads it. The caller adds what to do otherwise.
pub fn parse_failure(e: &serde_json::Error) -> String {
    if is_unknown_value(e) {
        format!("{e}; a newer Mneme may have written it, so update Mneme to read it")
    } else {
        e.to_string()
    }
}

/// Whether `e` is serde's "unknown variant": a value this build's enum does not have.
pub fn is_unknown_value(e: &serde_json::Error) -> bool {
    e.is_data() && e.to_string().starts_with("unknown variant")
}

/// Copies into `new` each field of `old` that this build does not know (not in `known`) and
/// `new` does not set: how a file written from a JSON object keeps a newer build's fields.
pub fn carry_unknown(old: &Map<String, Value>, new: &mut Map<String, Value>, known: &[&str]) {
    for (key, value) in old {
        if !known.contains(&key.as_str()) && !new.contains_key(key) {
            new.insert(key.clone(), value.clone());
        }
    }
}

/// A list of which this build reads the items it can and keeps the rest (a newer build's kind
/// of item) unread, to be written back as they were. Derefs to the items it read, so code that
/// works on the list sees only those. Written back, the unread items come first: their place
/// among the others is not known once the list has been changed.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenList<T> {
    items: Vec<T>,
    unread: Vec<Value>,
}

impl<T> OpenList<T> {
    /// The items this build could not read, as they are in the file.
    pub fn unread(&self) -> &[Value] {
        &self.unread
    }
}

impl<T> Default for OpenList<T> {
    fn default() -> Self {
        OpenList { items: Vec::new(), unread: Vec::new() }
    }
}

impl<T> From<Vec<T>> for OpenList<T> {
    fn from(items: Vec<T>) -> Self {
        OpenList { items, unread: Vec::new() }
    }
}

impl<T> Deref for OpenList<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.items
    }
}

impl<T> DerefMut for OpenList<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.items
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for OpenList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut list = OpenList::default();
        for value in Vec::<Value>::deserialize(d)? {
            match T::deserialize(&value) {
                Ok(item) => list.items.push(item),
                Err(_) => list.unread.push(value),
            }
        }
        Ok(list)
    }
}

impl<T: Serialize> Serialize for OpenList<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.unread.len() + self.items.len()))?;
        for v in &self.unread {
            seq.serialize_element(v)?;
        }
        for item in &self.items {
            seq.serialize_element(item)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Kind {
        Old,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Item {
        kind: Kind,
    }

    #[test]
    fn versions_newer_than_supported_are_refused_with_what_to_do() {
        assert_eq!(check_version(1, 1), Ok(()));
        assert_eq!(check_version(0, 1), Ok(()));
        let e = check_version(2, 1).unwrap_err();
        assert!(e.to_string().contains("newer Mneme") && e.to_string().contains("update Mneme"), "{e}");
        assert_eq!(version_of(br#"{"version": 3, "anything": [1, {"x": 2}]}"#), Some(3));
        assert_eq!(version_of(br#"{"other": 1}"#), None);
        assert_eq!(version_of(br#"{"version": "2"}"#), None);
        assert_eq!(version_of(b"{"), None);
        assert!(check_version_of(br#"{"version": 9}"#, 1).is_err());
        assert!(check_version_of(b"not json", 1).is_ok());
    }

    #[test]
    fn an_unknown_enum_value_is_named_as_possibly_newer() {
        let e = serde_json::from_str::<Item>(r#"{"kind": "new"}"#).unwrap_err();
        assert!(is_unknown_value(&e));
        assert!(parse_failure(&e).contains("update Mneme"), "{}", parse_failure(&e));
        let broken = serde_json::from_str::<Item>(r#"{"kind": 3}"#).unwrap_err();
        assert!(!is_unknown_value(&broken) && !parse_failure(&broken).contains("newer"));
    }

    #[test]
    fn unknown_fields_are_carried_and_known_ones_are_not() {
        let old: Map<String, Value> = serde_json::from_str(r#"{"kind": "a", "cleared": 1, "future": {"x": 1}}"#).unwrap();
        let mut new: Map<String, Value> = serde_json::from_str(r#"{"kind": "b"}"#).unwrap();
        carry_unknown(&old, &mut new, &["kind", "cleared"]);
        assert_eq!(Value::Object(new), serde_json::json!({"kind": "b", "future": {"x": 1}}));
    }

    #[test]
    fn an_open_list_keeps_items_it_cannot_read() {
        let mut list: OpenList<Item> = serde_json::from_str(r#"[{"kind": "old"}, {"kind": "new", "more": 1}, {"kind": "old"}]"#).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list.unread(), [serde_json::json!({"kind": "new", "more": 1})]);
        list.remove(0);
        assert_eq!(serde_json::to_value(&list).unwrap(), serde_json::json!([{"kind": "new", "more": 1}, {"kind": "old"}]));
    }
}
