//! No launcher: qola runs the compiler itself.

use crate::compile::launcher::{Answered, Kind};

/// No launcher.
#[derive(Debug)]
pub(crate) struct NoLauncher;

impl Kind for NoLauncher {
    fn words(&self) -> &[String] {
        &[]
    }

    /// The compiler ran for every unit, here: its peaks count.
    fn peaks_count(&self, _answered: &Answered) -> bool {
        true
    }
}
