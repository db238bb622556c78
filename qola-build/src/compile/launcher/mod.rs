//! Compiler launchers: the program that wraps every compile (`QOLA_COMPILER_LAUNCHER`,
//! [`crate::HipBuild::launcher`]), as one value decided once when the build is resolved
//! ([`Launcher::decide`]: the first of [`KINDS`] that takes the program, by its name and, for
//! sccache, whether its config has a `[dist]` section). Each kind is a file here implementing
//! [`Kind`], which is all the build asks of a launcher; nothing outside this folder names a
//! kind:
//!
//! | kind | chosen when | environment qola adds (unless the user set it) | server | counters | compiles' peak memory counts |
//! |---|---|---|---|---|---|
//! | none (`none.rs`) | no launcher | — | — | — | yes |
//! | ccache (`ccache.rs`) | the program is `ccache*` | `CCACHE_BASEDIR` (the links' directory), `CCACHE_NOHASHDIR=1` | — | `ccache --print-stats` | when ccache answered none |
//! | sccache (`sccache.rs`) | the program is `sccache*` | `SCCACHE_BASEDIRS` (the links' directory) | its own for the build | `sccache --show-stats` | when sccache answered none |
//! | farm (`farm/`) | `sccache*` alone, and its config has `[dist]` | as sccache, plus qola's config | its own for the build | sccache's, with distributed compiles | no: the compiles ran elsewhere (as sccache when the farm is down) |
//! | other (`other.rs`) | anything else (`distcc`, a script) | — | — | — | no: it may have answered from a cache |
//!
//! The environment makes launchers hash names alike in every place: compiles run in the links'
//! directory of the build's roots (see `roots`) with every path by its name, and these settings
//! keep that directory out of what they hash. sccache reads its settings when its server
//! starts, so each build runs its own server (`farm::Server`), stopped when the build ends.
//!
//! Adding a launcher: a file here with a type implementing [`Kind`] and its `detect`, and a line
//! in [`KINDS`]; its tests beside it.

mod ccache;
mod farm;
mod hits;
mod none;
mod other;
mod sccache;

use std::any::Any;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::build_script::Env;
use crate::compile::Result;
pub(crate) use ccache::Answer;
pub use farm::FarmReport;
pub(crate) use hits::requests;
pub use hits::{LauncherHits, RemoteFailures};
pub(crate) use sccache::Sccache;

/// A kind's detection: the kind when it takes `words` (the program first), for compiles in
/// `links` (the roots' links directory).
type Detect = fn(&Env, &[String], &Path) -> Result<Option<Box<dyn Kind>>>;

/// The kinds, asked in order; a program none takes runs as given (`other.rs`).
const KINDS: [Detect; 2] = [ccache::detect, sccache::detect];

/// What a launcher does for a build (see the module docs). A kind answers what applies to it;
/// the defaults are a launcher that only wraps the command.
pub(crate) trait Kind: std::fmt::Debug {
    /// The program and arguments put before the compiler's command.
    fn words(&self) -> &[String];

    /// The command that runs `compiler` (the compiler and its arguments) through the launcher.
    fn wrap(&self, compiler: Vec<String>) -> Vec<String> {
        self.words().iter().cloned().chain(compiler).collect()
    }

    /// The variables every compile runs with.
    fn env(&self) -> &[(String, String)] {
        &[]
    }

    /// Asked once, when something compiles (`qola plan` too), before the plan is decided:
    /// whether compiles can go elsewhere (the compile farm is up), the launcher made ready for
    /// it ([`Kind::distributes`] says the answer).
    fn ask(&mut self, _env: &Env, _compile: &Compile) -> Result<()> {
        Ok(())
    }

    /// Whether compiles go elsewhere, once [`Kind::ask`] found that they can.
    fn distributes(&self) -> bool {
        false
    }

    /// Before the first compile (only builds that compile): its server starts, if it has one.
    fn start(&mut self) {}

    /// How many compiles it holds at once, and why, when that is its own (compiles sent
    /// elsewhere use neither the local cores nor the local memory).
    fn capacity(&self) -> Option<(usize, String)> {
        None
    }

    /// Why compiles it could send elsewhere stay here, when they do.
    fn stays_here(&self) -> Option<&str> {
        None
    }

    /// Its counters now, when it keeps any.
    fn counters(&self) -> Option<Counters> {
        None
    }

    /// What it answered since `before`; `log`: the log its [`Kind::remote_log_var`] named.
    fn answered(&self, _before: Counters, _log: Option<&Path>) -> Answered {
        Answered::default()
    }

    /// Whether the peak memory measured around its compiles is the compiler's.
    fn peaks_count(&self, answered: &Answered) -> bool;

    /// The variable that makes it keep a log saying why requests to its remote storage failed.
    fn remote_log_var(&self) -> Option<&'static str> {
        None
    }

    /// The variable that makes it log, per compile, where it answered from.
    fn unit_log_var(&self) -> Option<&'static str> {
        None
    }

    /// Per source (as the compiles named it), where it answered from, read from `log` (see
    /// [`Kind::unit_log_var`]).
    fn unit_answers(&self, _log: &Path) -> BTreeMap<String, Answer> {
        BTreeMap::new()
    }

    /// The path a compile of `source` gives the compiler instead, and a directory its quoted
    /// includes need (`-iquote`), when the launcher cannot take the source's own.
    fn source_alias(&self, _source: &Path, _out_dir: &Path) -> Option<(PathBuf, PathBuf)> {
        None
    }

    /// Whether a path a depfile names is one of the launcher's aliases (not an input).
    fn is_alias(&self, _path: &Path) -> bool {
        false
    }

    /// What it must do to an object it compiled before the object is stored.
    fn finish_object(&self, _object: &Path) -> Result<()> {
        Ok(())
    }

    /// The compiler's exit status and message of a failed compile, from what the launcher
    /// said.
    fn failure(&self, code: Option<i32>, stderr: &str) -> (Option<i32>, String) {
        (code, stderr.to_string())
    }
}

/// The launcher of a build: one [`Kind`], decided once.
#[derive(Debug)]
pub(crate) struct Launcher {
    kind: Box<dyn Kind>,
}

/// A launcher's counters before the compiles, to compare with after; each kind reads its own.
pub(crate) struct Counters(Box<dyn Any>);

/// What the launcher answered for a build's compiles.
#[derive(Debug, Default)]
pub(crate) struct Answered {
    /// Its cache's answers, when it reports them.
    pub hits: Option<LauncherHits>,
    /// What the compile farm did, when the compiles ran on one.
    pub farm: Option<FarmReport>,
}

/// The HIP compile of a build, as a launcher that sends compiles elsewhere needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compile<'a> {
    /// Whether the compiler is a clang driver already (nothing to expand).
    pub is_clang: bool,
    /// The compile command shared by every unit (the compiler first).
    pub command: &'a [String],
    /// The compiler's environment (a module's clang: `HIP_CLANG_PATH`).
    pub env: &'a [(String, String)],
    /// qola's cache (the toolchain archive, qola's sccache config).
    pub cache: &'a Path,
    /// A directory of the build's own (hipcc's expansion).
    pub work: &'a Path,
}

impl Launcher {
    /// The launcher `words` (program and arguments; empty: none), with what it needs to hash
    /// names alike when compiles run in `links` (the roots' links directory).
    pub(crate) fn decide(env: &Env, words: Vec<String>, links: &Path) -> Result<Launcher> {
        let kind = match words.is_empty() {
            true => Box::new(none::NoLauncher),
            false => {
                let mut found = None;
                for detect in KINDS {
                    found = detect(env, &words, links)?;
                    if found.is_some() {
                        break;
                    }
                }
                found.unwrap_or_else(|| Box::new(other::Other::new(words)))
            }
        };
        Ok(Launcher { kind })
    }

    /// Whether there is a launcher at all (a launcher caches and sends whole compiles, so the
    /// build does not split its units).
    pub(crate) fn wraps(&self) -> bool {
        !self.kind.words().is_empty()
    }

    /// What the launcher answered since `before` (read by [`Kind::counters`]; `None`: it keeps
    /// no counters).
    pub(crate) fn answered_since(&self, before: Option<Counters>, log: Option<&Path>) -> Answered {
        match before {
            Some(before) => self.kind.answered(before, log),
            None => Answered::default(),
        }
    }
}

impl std::ops::Deref for Launcher {
    type Target = dyn Kind + 'static;

    fn deref(&self) -> &(dyn Kind + 'static) {
        self.kind.as_ref()
    }
}

impl std::ops::DerefMut for Launcher {
    fn deref_mut(&mut self) -> &mut (dyn Kind + 'static) {
        self.kind.as_mut()
    }
}

/// The file name of the launcher's program (`words[0]`).
pub(crate) fn program_name(words: &[String]) -> String {
    words
        .first()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Counters {
    /// A kind's counters.
    pub(crate) fn new<T: Any>(counters: T) -> Counters {
        Counters(Box::new(counters))
    }

    /// The counters, when they are of type `T` (the kind that read them).
    pub(crate) fn of<T: Any>(self) -> Option<T> {
        self.0.downcast().ok().map(|b| *b)
    }
}
