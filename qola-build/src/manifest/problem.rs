//! One mistake in a manifest: where and what.

/// One mistake in a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// 1-based line.
    pub line: usize,
    /// The key concerned, as `[table] key`, or `syntax`.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.key, self.message)
    }
}
