//! Reading TOML values while collecting every problem with its line: each accessor reports what
//! is wrong with a value and returns `None`, so reading goes on.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::manifest::problem::Problem;

/// Collects problems; every accessor reports what is wrong with a value and returns `None`.
pub(crate) struct Reader<'t> {
    pub(crate) text: &'t str,
    pub(crate) problems: Vec<Problem>,
}

pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

impl<'t> Reader<'t> {
    pub(crate) fn line(&self, at: usize) -> usize {
        self.text[..at.min(self.text.len())].matches('\n').count() + 1
    }

    pub(crate) fn problem(&mut self, at: usize, key: String, message: impl Into<String>) {
        let line = self.line(at);
        self.problems.push(Problem {
            line,
            key,
            message: message.into(),
        });
    }

    pub(crate) fn unknown(
        &mut self,
        table: &str,
        key: &Spanned<std::borrow::Cow<str>>,
        known: &[&str],
    ) {
        self.problem(
            key.span().start,
            format!("{table} {}", key.get_ref()),
            format!("unknown key (known here: {})", known.join(", ")),
        );
    }

    pub(crate) fn wrong(&mut self, at: &Value, key: String, expected: &str) {
        let found = match at.get_ref() {
            DeValue::String(_) => "a string",
            DeValue::Integer(_) => "an integer",
            DeValue::Float(_) => "a float",
            DeValue::Boolean(_) => "a boolean",
            DeValue::Datetime(_) => "a date",
            DeValue::Array(_) => "a list",
            DeValue::Table(_) => "a table",
        };
        self.problem(
            at.span().start,
            key,
            format!("expected {expected}, found {found}"),
        );
    }

    pub(crate) fn string(&mut self, v: &Value, key: String) -> Option<String> {
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.wrong(v, key, "a string");
                None
            }
        }
    }

    pub(crate) fn bool(&mut self, v: &Value, key: String) -> Option<bool> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.wrong(v, key, "true or false");
                None
            }
        }
    }

    pub(crate) fn integer(&mut self, v: &Value, key: String) -> Option<i64> {
        match v.get_ref() {
            DeValue::Integer(i) => {
                match i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()) {
                    Ok(n) => Some(n),
                    Err(_) => {
                        self.problem(v.span().start, key, "the integer does not fit 64 bits");
                        None
                    }
                }
            }
            _ => {
                self.wrong(v, key, "an integer");
                None
            }
        }
    }

    /// A list of strings, or one string (as AITER's own entries allow).
    pub(crate) fn strings(&mut self, v: &Value, key: String) -> Option<Vec<String>> {
        match v.get_ref() {
            DeValue::String(s) => Some(vec![s.to_string()]),
            DeValue::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    out.push(self.string(item, key.clone())?);
                }
                Some(out)
            }
            _ => {
                self.wrong(v, key, "a list of strings");
                None
            }
        }
    }

    /// A list of strings, or one string of `;`- or `,`-separated items.
    pub(crate) fn split_list(&mut self, v: &Value, key: String) -> Option<Vec<String>> {
        match v.get_ref() {
            DeValue::String(s) => Some(crate::common::text::split_list(s)),
            _ => self.strings(v, key),
        }
    }

    pub(crate) fn table<'v, 'i>(
        &mut self,
        v: &'v Value<'i>,
        key: String,
    ) -> Option<&'v DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => {
                self.wrong(v, key, "a table");
                None
            }
        }
    }

    /// The tables of an array of tables (`[[name]]`).
    pub(crate) fn tables<'v, 'i>(
        &mut self,
        v: &'v Value<'i>,
        key: &str,
    ) -> Vec<(usize, &'v DeTable<'i>)> {
        let DeValue::Array(items) = v.get_ref() else {
            self.wrong(
                v,
                key.to_string(),
                &format!("an array of tables ([[{key}]])"),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            if let Some(t) = self.table(item, format!("[[{key}]]")) {
                out.push((item.span().start, t));
            }
        }
        out
    }

    /// Reports every key of `table` not in `known`.
    pub(crate) fn only(&mut self, name: &str, table: &DeTable, known: &[&str]) {
        for (key, _) in table {
            if !known.contains(&key.get_ref().as_ref()) {
                self.unknown(name, key, known);
            }
        }
    }
}
