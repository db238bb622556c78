//! The object key, as a value: every input of a unit's key in one [`ObjectKey`], from which the
//! unit id, the key and the unit's record are computed, and which says how today's inputs differ
//! from a record's ([`ObjectKey::changes_from`]). Nothing here reads a file: the cache gives the
//! contents (see `super`), so the same key is computed wherever the files are.
//!
//! | hash | what goes in | why |
//! |---|---|---|
//! | unit id | [`FORMAT`]; the compiler's identity (its `--version` and its file's content); the compile arguments as names (`-I crate/kernels/include`); the source's name | one record per way of compiling one source: a new compiler or new flags is a new unit, never an old object; no location is in it |
//! | key | the unit id; the source's content; for each header the last depfile listed, its name and content, in the compiler's order | the object stored under it is the compile of exactly this content: any edit is a new key, an edit undone finds the old key |
//!
//! | record (`units/<unit id>.json`) | why |
//! |---|---|
//! | the source's name and content hash | says `new content: the source` |
//! | each header's name and content hash at that compile | the key's header list (the next key is computed from it), and which header changed |
//! | the compile's peak memory | caps how many compiles run at once (see `run::memory`) |
//! | where it was compiled | for people (`compiled for <out dir>`) |
//!
//! The **last compile** of a source for a library (`sources/`) keeps the compiler identity and
//! arguments ([`Invocation`]), so a new unit id can say `flags changed` or `compiler changed`
//! instead of `first build`.

use serde::{Deserialize, Serialize};

/// The format of unit ids, keys, records and objects: raise it when what goes into them or how
/// they are stored changes, so that entries written by another qola are never read as this
/// one's (they are new units, compiled again, and evicted in time).
pub(crate) const FORMAT: u32 = 3;

/// How a unit is compiled: the compiler's identity and the arguments, as names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Invocation {
    /// The compiler identity.
    pub identity: String,
    /// The compile arguments, as names.
    pub args: Vec<String>,
}

/// One input of a key: its name and, when it can be read, its content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Input {
    /// The name (see `roots`).
    pub name: String,
    /// Its content's hash (`None`: gone, or under a root this build does not have).
    pub content: Option<blake3::Hash>,
}

/// Every input of one unit's key (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectKey {
    /// How it is compiled.
    pub settings: Invocation,
    /// The source.
    pub source: Input,
    /// The headers, in the order the compiler read them.
    pub headers: Vec<Input>,
}

/// What a unit id's record keeps between builds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UnitRecord {
    /// The source's name.
    pub source: String,
    /// The source's content hash at the compile that wrote the record.
    pub source_hash: String,
    /// Every header the last depfile listed, by name, with its content hash then.
    pub headers: Vec<(String, String)>,
    /// The largest peak memory (bytes) measured compiling it.
    #[serde(default)]
    pub peak_memory: Option<u64>,
    /// How long its last compile took (seconds of wall time, all its passes): the longest
    /// units start first.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Where it was compiled (the output directory), for people.
    #[serde(default)]
    pub compiled_for: String,
    /// The library it was compiled for, for people (`qola cache`).
    #[serde(default)]
    pub library: String,
    /// The compiler, in words, for people (`qola cache`).
    #[serde(default)]
    pub compiler: String,
    /// The key of the object its last compile stored (`qola cache` counts objects by it).
    #[serde(default)]
    pub key: String,
}

/// An input of a unit whose content is not what its record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Changed {
    /// The source's content.
    Source,
    /// A header's content.
    Header(String),
    /// An input that is gone (or, for a name of a root this build does not have, elsewhere).
    Gone(String),
}

impl ObjectKey {
    /// The unit id (see the module docs).
    pub(crate) fn unit_id(&self) -> String {
        unit_id(&self.settings, &self.source.name)
    }

    /// The key, when every input could be read.
    pub(crate) fn key(&self) -> Option<String> {
        let mut hasher = blake3::Hasher::new();
        hasher.update(self.unit_id().as_bytes());
        hasher.update(self.source.content?.as_bytes());
        for header in &self.headers {
            hasher.update(header.name.as_bytes());
            hasher.update(b"\0");
            hasher.update(header.content?.as_bytes());
        }
        Some(hasher.finalize().to_hex().to_string())
    }

    /// How these inputs differ from `record`'s (the headers are `record`'s names), in the order
    /// the compiler read them.
    pub(crate) fn changes_from(&self, record: &UnitRecord) -> Vec<Changed> {
        let then =
            std::iter::once(&record.source_hash).chain(record.headers.iter().map(|(_, h)| h));
        let now = std::iter::once(&self.source).chain(&self.headers);
        now.zip(then)
            .enumerate()
            .filter_map(|(index, (input, then))| match input.content {
                None => Some(Changed::Gone(input.name.clone())),
                Some(now) if now.to_hex().as_str() != then.as_str() => Some(if index == 0 {
                    Changed::Source
                } else {
                    Changed::Header(input.name.clone())
                }),
                Some(_) => None,
            })
            .collect()
    }

    /// The record of this key's compile (inputs that cannot be read are left out).
    pub(crate) fn record(
        &self,
        peak_memory: Option<u64>,
        seconds: Option<f64>,
        compiled_for: &str,
    ) -> UnitRecord {
        let hex = |input: &Input| input.content.map(|c| c.to_hex().to_string());
        UnitRecord {
            source: self.source.name.clone(),
            source_hash: hex(&self.source).unwrap_or_default(),
            headers: self
                .headers
                .iter()
                .filter_map(|h| Some((h.name.clone(), hex(h)?)))
                .collect(),
            peak_memory,
            seconds,
            compiled_for: compiled_for.to_string(),
            library: String::new(),
            compiler: String::new(),
            key: String::new(),
        }
    }
}

/// The unit id of `source` (a name) compiled with `settings`.
pub(crate) fn unit_id(settings: &Invocation, source: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(format!("qola object format {FORMAT}\0").as_bytes());
    hasher.update(settings.identity.as_bytes());
    for arg in &settings.args {
        hasher.update(b"\0");
        hasher.update(arg.as_bytes());
    }
    hasher.update(b"\0source\0");
    hasher.update(source.as_bytes());
    hasher.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, content: &str) -> Input {
        Input {
            name: name.to_string(),
            content: Some(blake3::hash(content.as_bytes())),
        }
    }

    fn key() -> ObjectKey {
        ObjectKey {
            settings: Invocation {
                identity: "hipcc 6.4".to_string(),
                args: vec!["-O3".to_string(), "-Icrate/include".to_string()],
            },
            source: input("crate/a.hip", "kernel"),
            headers: vec![
                input("crate/include/a.h", "one"),
                input("/usr/include/x.h", "x"),
            ],
        }
    }

    #[test]
    fn the_unit_id_is_compiler_arguments_and_source_name_and_the_key_adds_contents() {
        let base = key();
        let mut other = base.clone();
        other.headers[0] = input("crate/include/a.h", "two");
        assert_eq!(
            base.unit_id(),
            other.unit_id(),
            "content is not in the unit id"
        );
        assert_ne!(base.key(), other.key(), "content is in the key");
        other = base.clone();
        other.settings.args.push("-g".to_string());
        assert_ne!(
            base.unit_id(),
            other.unit_id(),
            "arguments are in the unit id"
        );
        other = base.clone();
        other.source.name = "crate/b.hip".to_string();
        assert_ne!(
            base.unit_id(),
            other.unit_id(),
            "the source's name is in the unit id"
        );
        other = base.clone();
        other.headers[1].content = None;
        assert_eq!(other.key(), None, "no key without every input");
    }

    #[test]
    fn a_record_gives_back_the_key_and_names_what_changed_since() {
        let base = key();
        let record = base.record(Some(7), None, "/w/out");
        assert_eq!(record.headers.len(), 2);
        assert_eq!(base.changes_from(&record), Vec::new());
        let mut now = base.clone();
        now.headers[0] = input("crate/include/a.h", "two");
        now.headers[1].content = None;
        assert_eq!(
            now.changes_from(&record),
            [
                Changed::Header("crate/include/a.h".to_string()),
                Changed::Gone("/usr/include/x.h".to_string())
            ]
        );
        now = base.clone();
        now.source = input("crate/a.hip", "edited");
        assert_eq!(now.changes_from(&record), [Changed::Source]);
    }
}
