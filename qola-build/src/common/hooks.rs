//! Hooks for qola's own tests, so that no test depends on how fast the machine is: fail a
//! preparation after its n-th write, kill the process (as `kill -9` would) or stop it (as
//! `kill -STOP` would, for a test to act meanwhile) at a named step.
//! They exist only with the `test-hooks` feature; without it [`Hooks`] is always empty.

/// The hooks of one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hooks {
    /// Fail, as an I/O error would, instead of the write after the first `n`.
    pub fail_after_writes: Option<usize>,
    /// Kill this process (SIGKILL) when the named step is reached.
    pub kill_at: Option<String>,
    /// Stop this process (SIGSTOP, as `kill -STOP` would) when the named step is reached, the
    /// first time: a test does what it must meanwhile, then lets it go on (SIGCONT).
    pub stop_at: Option<String>,
}

impl Hooks {
    /// The hooks the environment asks for (`QOLA_TEST_KILL_AT`, `QOLA_TEST_STOP_AT`,
    /// `QOLA_TEST_FAIL_AFTER_WRITES`, read through `var`, the caller's tracked environment), with
    /// the `test-hooks` feature; none without it.
    pub(crate) fn from_env(var: impl Fn(&str) -> Option<String>) -> Hooks {
        if !cfg!(feature = "test-hooks") {
            return Hooks::default();
        }
        let text = |name: &str| var(name);
        Hooks {
            fail_after_writes: text("QOLA_TEST_FAIL_AFTER_WRITES").and_then(|n| n.parse().ok()),
            kill_at: text("QOLA_TEST_KILL_AT"),
            stop_at: text("QOLA_TEST_STOP_AT"),
        }
    }

    /// A named step (see `prepare::journal` for a preparation's names; a build's are
    /// `compile:planned`, `compile:claimed` (every unit it compiles claimed), `cache:held`,
    /// `cache:locked`): the process ends or stops here when a test asked.
    pub(crate) fn step(&self, name: &str) {
        static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if self.stop_at.as_deref() == Some(name)
            && !STOPPED.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            // SAFETY: raising a signal has no memory-safety preconditions.
            unsafe {
                libc::raise(libc::SIGSTOP);
            }
        }
        if self.kill_at.as_deref() == Some(name) {
            // SAFETY: raising a signal has no memory-safety preconditions.
            unsafe {
                libc::raise(libc::SIGKILL);
            }
            std::process::abort();
        }
    }
}
