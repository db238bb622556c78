//! The compile plan, as a value: for each unit, reuse its object, compile it here, or send it to
//! the compile farm, and why. [`decide`] is a pure function of what one lookup in the object
//! cache found ([`UnitFacts`]), the compile the build would run (compiler identity and
//! arguments), whether the cached object passed its check, and whether the launcher sends
//! compiles elsewhere; it is decided once, the executor acts on its answer, and `qola plan`
//! prints it. Reasons are data ([`CompileReason`]) until [`CompileReason`]'s `Display` turns them into words.

use std::fmt;
use std::path::PathBuf;

use crate::compile::cache::Invocation;
use crate::compile::cache::{Changed, Recorded, UnitFacts};

/// One unit as its lookup found it: where its source is, its name and id, what the cache knows
/// of it; its plan is decided from this ([`Looked::decide`]).
pub(crate) struct Looked {
    /// The source file.
    pub source: PathBuf,
    /// The source's name (see `roots`).
    pub name: String,
    /// Flags of this unit alone ([`super::HipBuild::file_flags`]), as names, after the build's.
    pub extra: Vec<String>,
    /// What it compiles besides itself ([`super::HipBuild::file_holds`]), for the timings.
    pub holds: Vec<String>,
    /// How it is compiled: the build's settings, and its own flags after them.
    pub settings: Invocation,
    /// The unit id (see `cache::key`).
    pub id: String,
    /// What the cache knows of it.
    pub facts: UnitFacts,
}

/// One unit as the build sees it: what its lookup found (read through it, as `unit.name`) and
/// the plan for it.
pub(crate) struct Unit {
    /// What its lookup found.
    pub looked: Looked,
    /// What to do with it.
    pub plan: UnitPlan,
    /// The object a reused unit links, once checked (see `cache`: Failure).
    pub object: Option<PathBuf>,
}

impl std::ops::Deref for Unit {
    type Target = Looked;

    fn deref(&self) -> &Looked {
        &self.looked
    }
}

impl Looked {
    /// The unit with its plan, decided once ([`decide`]): `taken` is its cached object once
    /// checked (`None`: not checked), `distribute` whether the launcher sends compiles
    /// elsewhere.
    pub(crate) fn decide(
        self,
        taken: Option<std::result::Result<PathBuf, String>>,
        distribute: bool,
    ) -> Unit {
        let unusable = match &taken {
            Some(Err(why)) => Some(why.as_str()),
            _ => None,
        };
        let plan = decide(&self.facts, &self.settings, unusable, distribute);
        Unit {
            looked: self,
            plan,
            object: taken.and_then(|t| t.ok()),
        }
    }
}

/// What to do with one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UnitPlan {
    /// Its object is in qola's cache under `key`, compiled for `compiled_for`.
    Reuse { key: String, compiled_for: String },
    /// Compile it, here or (`distribute`) on the compile farm, because of `reason`.
    Compile {
        reason: CompileReason,
        distribute: bool,
    },
}

impl UnitPlan {
    /// Whether the unit is compiled (here or on the farm).
    pub(crate) fn compiles(&self) -> bool {
        matches!(self, UnitPlan::Compile { .. })
    }
}

/// Why a unit is compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CompileReason {
    /// Nothing was ever compiled from this source for this library.
    FirstBuild,
    /// Compiled before with another compiler.
    CompilerChanged,
    /// Compiled before with other arguments.
    FlagsChanged {
        added: Vec<String>,
        removed: Vec<String>,
    },
    /// The source's content changed.
    SourceChanged,
    /// A header's content changed.
    NewContent(String),
    /// An input is gone.
    Gone(String),
    /// The inputs are as recorded, but the object is no longer in the cache (evicted).
    Evicted,
    /// The cached object failed its check before it was linked (see `cache`: Failure).
    Unusable(String),
}

impl fmt::Display for CompileReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileReason::FirstBuild => write!(f, "first build"),
            CompileReason::CompilerChanged => write!(f, "compiler changed"),
            CompileReason::FlagsChanged { added, removed } => {
                write!(f, "flags changed")?;
                if !added.is_empty() {
                    write!(f, ": +{}", added.join(" +"))?;
                }
                if !removed.is_empty() {
                    let sep = if added.is_empty() { ": " } else { " " };
                    write!(f, "{sep}-{}", removed.join(" -"))?;
                }
                Ok(())
            }
            CompileReason::SourceChanged => write!(f, "new content: the source"),
            CompileReason::NewContent(header) => write!(f, "new content: {header}"),
            CompileReason::Gone(input) => write!(f, "input gone: {input}"),
            CompileReason::Evicted => write!(f, "its object was evicted from the cache"),
            CompileReason::Unusable(why) => write!(f, "its cached object cannot be used: {why}"),
        }
    }
}

/// The key of the unit's object when the cache holds it (the unit can be reused, unless the
/// object fails its check).
pub(crate) fn reusable(facts: &UnitFacts) -> Option<&str> {
    match &facts.recorded {
        Some(Recorded {
            key: Some(key),
            cached: true,
            ..
        }) => Some(key),
        _ => None,
    }
}

/// The plan for a unit whose compile would use `identity` and `args` (pure): `unusable` says
/// why its cached object failed its check, when it was checked and did; `distribute`, whether
/// the launcher sends compiles elsewhere (the compile farm is up).
pub(crate) fn decide(
    facts: &UnitFacts,
    settings: &Invocation,
    unusable: Option<&str>,
    distribute: bool,
) -> UnitPlan {
    let compile = |reason| UnitPlan::Compile { reason, distribute };
    let Some(recorded) = &facts.recorded else {
        return compile(new_unit(facts.last.as_ref(), settings));
    };
    if let Some(key) = reusable(facts) {
        return match unusable {
            Some(why) => compile(CompileReason::Unusable(why.to_string())),
            None => UnitPlan::Reuse {
                key: key.to_string(),
                compiled_for: recorded.compiled_for.clone(),
            },
        };
    }
    compile(match recorded.changed.first() {
        Some(Changed::Source) => CompileReason::SourceChanged,
        Some(Changed::Header(name)) => CompileReason::NewContent(name.clone()),
        Some(Changed::Gone(name)) => CompileReason::Gone(name.clone()),
        None => CompileReason::Evicted,
    })
}

/// Why a unit id never compiled before is new: compared with the last compile of its source.
fn new_unit(last: Option<&Invocation>, now: &Invocation) -> CompileReason {
    let Some(last) = last else {
        return CompileReason::FirstBuild;
    };
    let args = &now.args;
    if last.identity != now.identity {
        return CompileReason::CompilerChanged;
    }
    let added: Vec<String> = args
        .iter()
        .filter(|a| !last.args.contains(a))
        .cloned()
        .collect();
    let removed: Vec<String> = last
        .args
        .iter()
        .filter(|a| !args.contains(a))
        .cloned()
        .collect();
    if added.is_empty() && removed.is_empty() && last.args == *args {
        // Same compiler, same arguments, same source name: the same unit id, whose record is
        // gone (a cleared cache).
        return CompileReason::FirstBuild;
    }
    CompileReason::FlagsChanged { added, removed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::cache::Recorded;

    fn settings(args: &[&str]) -> Invocation {
        Invocation {
            identity: "id".to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    fn recorded(cached: bool, changed: Vec<Changed>) -> UnitFacts {
        UnitFacts {
            source: "crate/a.hip".to_string(),
            recorded: Some(Recorded {
                key: Some("k".to_string()),
                cached,
                changed,
                compiled_for: "/w/out".to_string(),
                headers: Vec::new(),
            }),
            last: None,
        }
    }

    #[test]
    fn a_cached_object_is_reused_whatever_changed_since_the_record() {
        let plan = decide(
            &recorded(true, vec![Changed::Source]),
            &settings(&[]),
            None,
            false,
        );
        assert_eq!(
            plan,
            UnitPlan::Reuse {
                key: "k".to_string(),
                compiled_for: "/w/out".to_string()
            }
        );
    }

    #[test]
    fn a_cached_object_that_fails_its_check_compiles_saying_why() {
        let plan = decide(
            &recorded(true, vec![]),
            &settings(&[]),
            Some("its object is gone"),
            true,
        );
        let UnitPlan::Compile { reason, distribute } = plan else {
            panic!("expected a compile, got {plan:?}")
        };
        assert_eq!(
            (reason.to_string().as_str(), distribute),
            ("its cached object cannot be used: its object is gone", true)
        );
    }

    #[test]
    fn a_changed_input_names_itself_and_the_farm_decides_where() {
        let header = Changed::Header("aiter/csrc/include/mha.h".to_string());
        for (changed, words) in [
            (vec![Changed::Source], "new content: the source"),
            (
                vec![header.clone()],
                "new content: aiter/csrc/include/mha.h",
            ),
            (
                vec![Changed::Gone("gen/x.h".to_string())],
                "input gone: gen/x.h",
            ),
            (vec![], "its object was evicted from the cache"),
        ] {
            for farm in [false, true] {
                let UnitPlan::Compile { reason, distribute } = decide(
                    &recorded(false, changed.clone()),
                    &settings(&[]),
                    None,
                    farm,
                ) else {
                    panic!("expected a compile")
                };
                assert_eq!((reason.to_string().as_str(), distribute), (words, farm));
            }
        }
    }

    #[test]
    fn a_new_unit_says_what_differs_from_the_last_compile_of_its_source() {
        let new = |last: Option<Invocation>| {
            let facts = UnitFacts {
                source: "crate/a.hip".to_string(),
                recorded: None,
                last,
            };
            match decide(&facts, &settings(&["-O3", "-DX=2"]), None, false) {
                UnitPlan::Compile { reason, .. } => reason.to_string(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(new(None), "first build");
        let last = |identity: &str, a: &[&str]| {
            Some(Invocation {
                identity: identity.to_string(),
                ..settings(a)
            })
        };
        assert_eq!(new(last("old", &["-O3", "-DX=2"])), "compiler changed");
        assert_eq!(
            new(last("id", &["-O3", "-DX=1"])),
            "flags changed: +-DX=2 --DX=1"
        );
        assert_eq!(new(last("id", &["-O3", "-DX=2"])), "first build");
    }
}
