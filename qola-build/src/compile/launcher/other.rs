//! Another launcher (`distcc`, a script): run as given, with nothing added.

use crate::compile::launcher::{Answered, Kind};

/// A program qola knows nothing more of.
#[derive(Debug)]
pub(crate) struct Other {
    words: Vec<String>,
}

impl Other {
    /// `words`: the program and its arguments.
    pub(crate) fn new(words: Vec<String>) -> Other {
        Other { words }
    }
}

impl Kind for Other {
    fn words(&self) -> &[String] {
        &self.words
    }

    /// It may have answered from a cache: its peaks are not the compiler's.
    fn peaks_count(&self, _answered: &Answered) -> bool {
        false
    }
}
