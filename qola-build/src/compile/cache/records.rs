//! What the cache tells and is told about units, as values: a unit's record compared with
//! today's files, the facts the plan decides from, a compiled object to store, where an object
//! came from, what a compile measured, and what a clear removed.

use std::path::Path;

use super::{Changed, Invocation};

/// What `qola cache --clear` removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Cleared {
    /// Objects removed.
    pub objects: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Unit records removed (what made a unit's key known before compiling it, and what said
    /// why it compiles).
    pub records: usize,
    /// Builds removed from the history `qola cache` lists.
    pub builds: usize,
}

/// What a unit's record says today.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The key from the recorded header list and today's content (`None`: an input is gone).
    pub key: Option<String>,
    /// The object for that key is in the cache.
    pub cached: bool,
    /// Inputs whose content differs from the record's, in the order the compiler read them.
    pub changed: Vec<Changed>,
    /// Where the recorded compile ran.
    pub compiled_for: String,
    /// The headers its depfile listed, by name.
    pub headers: Vec<String>,
}

/// Everything the plan needs to know about one unit, from one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnitFacts {
    /// The source's name.
    pub source: String,
    /// The unit id's record, compared with today's files.
    pub recorded: Option<Recorded>,
    /// The last compile of this source for this library, when the unit id has no record.
    pub last: Option<Invocation>,
}

/// A freshly compiled object to store: `source` (a name) of `library`, compiled with
/// `settings`, keyed by its depfile's `headers` (names), at `object`, with what its compile
/// measured.
#[derive(Clone, Copy)]
pub(crate) struct Compiled<'a> {
    /// The library.
    pub library: &'a str,
    /// The source's name.
    pub source: &'a str,
    /// How it was compiled.
    pub settings: &'a Invocation,
    /// The headers its depfile listed, by name.
    pub headers: &'a [String],
    /// The object.
    pub object: &'a Path,
    /// What its compile measured.
    pub measured: Measured,
}

/// Where and by what an object was compiled, for people (`qola cache`, a reuse's reason).
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// The output directory.
    pub out_dir: String,
    /// The compiler, in words (`HIP 6.4.43484, clang 21.1.8`).
    pub compiler: String,
}

/// What a compile measured: its peak memory (when it counts) and its wall time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    pub peak: Option<u64>,
    pub seconds: f64,
}
