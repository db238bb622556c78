//! QoLA's precedence, the same for every setting: an explicit argument (a builder's method, a
//! command-line option), then the environment, then the manifest, then the default. Each layer
//! is looked at only when the ones above it gave nothing, so an environment variable is read
//! (and, in a build script, watched) only when it can matter.
//!
//! ```text
//! let url = Setting::argument(self.url.clone())
//!     .environment(|| env.var("QOLA_AITER_URL"))?
//!     .manifest(|| manifest.qola.aiter_url.clone())
//!     .or(|| DEFAULT_AITER_URL.to_string());
//! ```

/// A setting being resolved: the value of the highest layer that gave one so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting<T>(Option<T>);

impl<T> Setting<T> {
    /// The explicit argument, if any.
    pub(crate) fn argument(value: Option<T>) -> Setting<T> {
        Setting(value)
    }

    /// Then the environment (`read` runs only when no argument was given).
    pub(crate) fn environment<E>(
        self,
        read: impl FnOnce() -> Result<Option<T>, E>,
    ) -> Result<Setting<T>, E> {
        Ok(match self.0 {
            Some(value) => Setting(Some(value)),
            None => Setting(read()?),
        })
    }

    /// Then the environment, for a read that cannot fail (a path: `Env::var_os`); `read` runs
    /// only when no layer above gave a value.
    pub(crate) fn environment_path(self, read: impl FnOnce() -> Option<T>) -> Setting<T> {
        Setting(self.0.or_else(read))
    }

    /// Then the manifest (`read` runs only when nothing above gave a value).
    pub(crate) fn manifest(self, read: impl FnOnce() -> Option<T>) -> Setting<T> {
        Setting(self.0.or_else(read))
    }

    /// The value, or the default.
    pub(crate) fn or(self, default: impl FnOnce() -> T) -> T {
        self.0.unwrap_or_else(default)
    }

    /// The value, if a layer gave one.
    pub(crate) fn value(self) -> Option<T> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_layer_that_gives_a_value_wins_and_lower_layers_are_not_read() {
        // argument, environment, manifest -> the value, and which layers were read.
        type Row = (
            Option<&'static str>,
            Option<&'static str>,
            Option<&'static str>,
            &'static str,
            &'static str,
        );
        let rows: [Row; 6] = [
            (Some("arg"), Some("env"), Some("manifest"), "arg", ""),
            (None, Some("env"), Some("manifest"), "env", "E"),
            (None, None, Some("manifest"), "manifest", "EM"),
            (None, None, None, "default", "EMD"),
            (Some("arg"), None, None, "arg", ""),
            (None, Some("env"), None, "env", "E"),
        ];
        for (argument, environment, manifest, expected, read) in rows {
            let asked = std::cell::RefCell::new(String::new());
            let value = Setting::argument(argument)
                .environment(|| {
                    asked.borrow_mut().push('E');
                    Ok::<_, ()>(environment)
                })
                .unwrap()
                .manifest(|| {
                    asked.borrow_mut().push('M');
                    manifest
                })
                .or(|| {
                    asked.borrow_mut().push('D');
                    "default"
                });
            assert_eq!(value, expected, "{argument:?} {environment:?} {manifest:?}");
            assert_eq!(
                asked.into_inner(),
                read,
                "{argument:?} {environment:?} {manifest:?}"
            );
        }
        // An environment that cannot be read is an error, not a fall-through.
        assert_eq!(
            Setting::<u8>::argument(None).environment(|| Err("bad")),
            Err("bad")
        );
        assert_eq!(Setting::argument(Some(1)).value(), Some(1));
        // A path variable's layers, one after the other: the first that gives a value wins and
        // the ones after it are not read.
        let asked = std::cell::RefCell::new(Vec::new());
        let read = |name: &'static str, value: Option<u8>| {
            asked.borrow_mut().push(name);
            value
        };
        let value = Setting::argument(None)
            .environment_path(|| read("A", None))
            .environment_path(|| read("B", Some(2)))
            .environment_path(|| read("C", Some(3)))
            .value();
        assert_eq!((value, asked.into_inner()), (Some(2), vec!["A", "B"]));
    }
}
