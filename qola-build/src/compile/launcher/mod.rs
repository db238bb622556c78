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
//! | sccache (`farm/sccache.rs`: sccache here, or on its farm with a `[dist]` config) | the program is `sccache*` | `SCCACHE_BASEDIRS` (the links' directory) | its own for the build | `sccache --show-stats` | when sccache answered none |
//! | farm (`farm/`) | `sccache*` alone, and its config has `[dist]` | as sccache, plus qola's config | its own for the build | sccache's, with distributed compiles | no: the compiles ran elsewhere (as sccache when the farm is down) |
//! | other (`other.rs`) | anything else (`distcc`, a script) | — | — | — | no: it may have answered from a cache |
//!
//! The environment makes launchers hash names alike in every place: compiles run in the links'
//! directory of the build's roots (see `roots`) with every path by its name, and these settings
//! keep that directory out of what they hash. sccache reads its settings when its server
//! starts, so each build runs its own server (`farm::Server`), stopped when the build ends.
//!
//! Adding a launcher: a file here with a type implementing [`Kind`] and its `detect`, and a line
//! in [`KINDS`]; its tests beside it. A launcher that sends compiles elsewhere implements
//! [`Elsewhere`] too and gives it from [`Kind::elsewhere`]: nothing else asks for it.

mod ccache;
mod farm;
mod hits;
mod none;
mod other;

use std::any::Any;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::build_script::Env;
use crate::compile::Result;
pub(crate) use ccache::Answer;
pub use farm::ElsewhereReport;
pub(crate) use hits::requests;
pub use hits::{LauncherHits, RemoteFailures};

/// A kind's detection: the kind when it takes `words` (the program first), for compiles in
/// `links` (the roots' links directory).
type Detect = fn(&Env, &[String], &Path) -> Result<Option<Box<dyn Kind>>>;

/// The kinds, asked in order; a program none takes runs as given (`other.rs`).
const KINDS: [Detect; 2] = [ccache::detect, farm::detect_sccache];

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

    /// Before the first compile (only builds that compile): its server starts, if it has one.
    fn start(&mut self) {}

    /// Its counters now, when it keeps any.
    fn counters(&self) -> Option<Counters> {
        None
    }

    /// What it answered since `before`; `log`: the log its [`Logs::remote_log_var`] named.
    fn answered(&self, _before: Counters, _log: Option<&Path>) -> Answered {
        Answered::default()
    }

    /// Whether the peak memory measured around its compiles is the compiler's.
    fn peaks_count(&self, answered: &Answered) -> bool;

    /// The logs it keeps of where it answered from, if it keeps any (ccache): see [`Logs`].
    fn logs(&self) -> Option<&dyn Logs> {
        None
    }

    /// What it does when it sends compiles elsewhere, if it can (the farm): the one optional
    /// capability, see [`Elsewhere`].
    fn elsewhere(&self) -> Option<&dyn Elsewhere> {
        None
    }

    /// [`Kind::elsewhere`], to ask it.
    fn elsewhere_mut(&mut self) -> Option<&mut dyn Elsewhere> {
        None
    }
}

/// A launcher that can send compiles elsewhere (the compile farm): what only such a launcher
/// answers, reached through [`Kind::elsewhere`]. The build asks it through [`Launcher`], which
/// answers for a launcher without it (compiles stay here, as given).
pub(crate) trait Elsewhere {
    /// Asked once, when something compiles (`qola plan` too), before the plan is decided:
    /// whether compiles can go elsewhere (the compile farm is up), the launcher made ready for
    /// it ([`Elsewhere::distributes`] says the answer).
    fn ask(&mut self, env: &Env, compile: &Compile) -> Result<()>;

    /// Whether compiles go elsewhere, once [`Elsewhere::ask`] found that they can.
    fn distributes(&self) -> bool;

    /// How many compiles it holds at once, and why (compiles sent elsewhere use neither the
    /// local cores nor the local memory).
    fn capacity(&self) -> Option<(usize, String)>;

    /// Why compiles it could send elsewhere stay here, when they do, in its own words (the
    /// build's summary says them).
    fn stays_here(&self) -> Option<String>;

    /// The path a compile of `source` gives the compiler instead, and a directory its quoted
    /// includes need (`-iquote`), when it cannot take the source's own.
    fn source_alias(&self, source: &Path, out_dir: &Path) -> Option<(PathBuf, PathBuf)>;

    /// Whether a path a depfile names is one of its aliases (not an input).
    fn is_alias(&self, path: &Path) -> bool;

    /// What it must do to an object it compiled before the object is stored.
    fn finish_object(&self, object: &Path) -> Result<()>;

    /// The compiler's exit status and message of a failed compile, from what it said.
    fn failure(&self, code: Option<i32>, stderr: &str) -> (Option<i32>, String);
}

/// The logs a launcher keeps of where it answered from (ccache's), reached through
/// [`Kind::logs`]; the build asks them through [`Launcher`].
pub(crate) trait Logs {
    /// The variable that makes it keep a log saying why requests to its remote storage failed.
    fn remote_log_var(&self) -> Option<&'static str>;

    /// The variable that makes it log, per compile, where it answered from.
    fn unit_log_var(&self) -> Option<&'static str>;

    /// Per source (as the compiles named it), where it answered from, read from `log` (see
    /// [`Logs::unit_log_var`]).
    fn unit_answers(&self, log: &Path) -> BTreeMap<String, Answer>;
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
    pub elsewhere: Option<ElsewhereReport>,
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
    /// The variable that makes the launcher log why requests to its remote storage failed.
    pub(crate) fn remote_log_var(&self) -> Option<&'static str> {
        self.kind.logs()?.remote_log_var()
    }

    /// The variable that makes the launcher log, per compile, where it answered from.
    pub(crate) fn unit_log_var(&self) -> Option<&'static str> {
        self.kind.logs()?.unit_log_var()
    }

    /// Per source, where the launcher answered from, read from `log`.
    pub(crate) fn unit_answers(&self, log: &Path) -> BTreeMap<String, Answer> {
        self.kind
            .logs()
            .map(|logs| logs.unit_answers(log))
            .unwrap_or_default()
    }

    /// Asks whether compiles can go elsewhere (see [`Elsewhere::ask`]); nothing to ask of a
    /// launcher that cannot.
    pub(crate) fn ask(&mut self, env: &Env, compile: &Compile) -> Result<()> {
        match self.kind.elsewhere_mut() {
            Some(elsewhere) => elsewhere.ask(env, compile),
            None => Ok(()),
        }
    }

    /// Whether compiles go elsewhere.
    pub(crate) fn distributes(&self) -> bool {
        self.kind.elsewhere().is_some_and(|e| e.distributes())
    }

    /// How many compiles it holds at once, and why, when that is its own.
    pub(crate) fn capacity(&self) -> Option<(usize, String)> {
        self.kind.elsewhere()?.capacity()
    }

    /// Why compiles it could send elsewhere stay here, when they do.
    pub(crate) fn stays_here(&self) -> Option<String> {
        self.kind.elsewhere()?.stays_here()
    }

    /// The alias of `source` a compile gives the compiler, when the launcher needs one.
    pub(crate) fn source_alias(&self, source: &Path, out_dir: &Path) -> Option<(PathBuf, PathBuf)> {
        self.kind.elsewhere()?.source_alias(source, out_dir)
    }

    /// Whether a path a depfile names is one of the launcher's aliases (not an input).
    pub(crate) fn is_alias(&self, path: &Path) -> bool {
        self.kind.elsewhere().is_some_and(|e| e.is_alias(path))
    }

    /// What the launcher must do to an object it compiled before the object is stored.
    pub(crate) fn finish_object(&self, object: &Path) -> Result<()> {
        match self.kind.elsewhere() {
            Some(elsewhere) => elsewhere.finish_object(object),
            None => Ok(()),
        }
    }

    /// The compiler's exit status and message of a failed compile.
    pub(crate) fn failure(&self, code: Option<i32>, stderr: &str) -> (Option<i32>, String) {
        match self.kind.elsewhere() {
            Some(elsewhere) => elsewhere.failure(code, stderr),
            None => (code, stderr.to_string()),
        }
    }

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
