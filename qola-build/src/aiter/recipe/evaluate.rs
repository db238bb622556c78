//! The small language of `optCompilerConfig.json`'s fields (see the folder's docs): each field
//! a Python expression in a string, evaluated without Python; anything else an error naming the
//! module and the field.

use super::{AiterPaths, Result};
use crate::aiter::AiterError;
use crate::build_script::Env;
use crate::common::text::{python_quoted, python_unescape};

/// An evaluated expression.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Eval {
    Str(String),
    None,
    Bool(bool),
}

pub(super) struct Evaluator<'a> {
    pub(super) module: &'a str,
    pub(super) field: &'a str,
    pub(super) paths: &'a AiterPaths,
    pub(super) env: &'a Env<'a>,
}

impl Evaluator<'_> {
    pub(super) fn fail(&self, expr: &str, why: &str) -> AiterError {
        AiterError::AiterConfig {
            module: self.module.to_string(),
            field: self.field.to_string(),
            expression: expr.to_string(),
            why: why.to_string(),
        }
    }

    pub(super) fn eval(&self, expr: &str) -> Result<Eval> {
        let e = expr.trim();
        match e {
            "None" => return Ok(Eval::None),
            "True" => return Ok(Eval::Bool(true)),
            "False" => return Ok(Eval::Bool(false)),
            _ => {}
        }
        if let Some(body) = e.strip_prefix('f') {
            let inner =
                python_quoted(body).ok_or_else(|| self.fail(expr, "an f-string must be quoted"))?;
            return self.fstring(expr, inner).map(Eval::Str);
        }
        if let Some(inner) = python_quoted(e) {
            return Ok(Eval::Str(python_unescape(inner)));
        }
        self.call(expr, e)
    }

    /// `os.environ.get(...)`, `get_asm_dir()`, `get_gfx()`, or a path variable.
    fn call(&self, whole: &str, e: &str) -> Result<Eval> {
        if let Some(args) = e
            .strip_prefix("os.environ.get(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let (name, default) = match split_args(args).as_slice() {
                [name] => (name.clone(), None),
                [name, default] => (name.clone(), Some(default.clone())),
                _ => return Err(self.fail(whole, "os.environ.get takes a name and a default")),
            };
            let name = python_quoted(&name)
                .map(python_unescape)
                .ok_or_else(|| self.fail(whole, "the variable name must be a string literal"))?;
            return Ok(match self.env.var(&name)? {
                Some(value) => Eval::Str(value),
                None => match default {
                    None => Eval::None,
                    Some(d) if d.parse::<i64>().is_ok() || d.parse::<f64>().is_ok() => Eval::Str(d),
                    Some(d) => self.eval(&d)?,
                },
            });
        }
        match e {
            "get_asm_dir()" => Ok(Eval::Str(format!(
                "{}/hsa/{}/",
                self.paths.meta.display(),
                self.paths.arch
            ))),
            "get_gfx()" => Ok(Eval::Str(self.paths.arch.clone())),
            // Newer AITERs read their tuned tables through the AITER_CONFIGS object.
            name if name.starts_with("AITER_CONFIGS.") => self
                .paths
                .variable(&name["AITER_CONFIGS.".len()..], self.env)?
                .map(Eval::Str)
                .ok_or_else(|| self.fail(whole, &format!("unknown variable `{name}`"))),
            name if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => self
                .paths
                .variable(name, self.env)?
                .map(Eval::Str)
                .ok_or_else(|| self.fail(whole, &format!("unknown variable `{name}`"))),
            _ => Err(self.fail(
                whole,
                "outside the language qola evaluates (literals, f-strings over path variables, os.environ.get, get_asm_dir(), get_gfx())",
            )),
        }
    }

    fn fstring(&self, whole: &str, body: &str) -> Result<String> {
        let mut out = String::new();
        let chars: Vec<char> = body.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '{' if chars.get(i + 1) == Some(&'{') => {
                    out.push('{');
                    i += 2;
                }
                '}' if chars.get(i + 1) == Some(&'}') => {
                    out.push('}');
                    i += 2;
                }
                '{' => {
                    let end = matching_brace(&chars, i)
                        .ok_or_else(|| self.fail(whole, "unbalanced `{` in the f-string"))?;
                    let inner: String = chars[i + 1..end].iter().collect();
                    match self.eval(&inner)? {
                        // A path with a space stays one word of a generator's command.
                        Eval::Str(s)
                            if self.field == "blob_gen_cmd"
                                && s.chars().any(char::is_whitespace)
                                && !in_quotes(&out) =>
                        {
                            let q = if s.contains('"') { '\'' } else { '"' };
                            out.push_str(&format!("{q}{s}{q}"));
                        }
                        Eval::Str(s) => out.push_str(&s),
                        Eval::Bool(b) => out.push_str(if b { "True" } else { "False" }),
                        Eval::None => out.push_str("None"),
                    }
                    i = end + 1;
                }
                '\\' if i + 1 < chars.len() => {
                    out.push(chars[i + 1]);
                    i += 2;
                }
                c => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        Ok(out)
    }
}

/// Whether `text` ends inside a quoted word (as [`shell_words`] reads it).
fn in_quotes(text: &str) -> bool {
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            _ => {}
        }
    }
    quote.is_some()
}

/// The `}` closing the `{` at `open`, skipping quoted text.
fn matching_brace(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits call arguments at top-level commas.
fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, ',') => out.push(std::mem::take(&mut current).trim().to_string()),
            (None, c) => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::build_script::Directives;

    fn eval(expr: &str) -> Result<Eval> {
        eval_at("/a", "f", expr)
    }

    /// `expr` of `field` for a tree at `root`.
    pub(in crate::aiter::recipe) fn eval_at(root: &str, field: &str, expr: &str) -> Result<Eval> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let paths = AiterPaths {
            root: PathBuf::from(root),
            meta: PathBuf::from(root),
            arch: "gfx942".to_string(),
            tuned_tables: None,
        }
        .merging_tables_in(Path::new(root).join("cache").as_path());
        Evaluator {
            module: "m",
            field,
            paths: &paths,
            env: &env,
        }
        .eval(expr)
    }

    #[test]
    fn the_config_language_evaluates() {
        assert_eq!(eval("'-DX=1'").unwrap(), Eval::Str("-DX=1".into()));
        assert_eq!(
            eval("f'{CK_DIR}/example/generate.py -d fwd --output_dir {{}}'").unwrap(),
            Eval::Str(
                "/a/3rdparty/composable_kernel/example/generate.py -d fwd --output_dir {}".into()
            )
        );
        assert_eq!(
            eval(r#"f'-DY={os.environ.get("QOLA_SURELY_UNSET_VARIABLE", 2)}'"#).unwrap(),
            Eval::Str("-DY=2".into())
        );
        assert_eq!(
            eval("os.environ.get('QOLA_SURELY_UNSET_VARIABLE')").unwrap(),
            Eval::None
        );
        assert_eq!(
            eval("f'{get_asm_dir()}/fmha_v3_fwd/codegen.py'").unwrap(),
            Eval::Str("/a/hsa/gfx942//fmha_v3_fwd/codegen.py".into())
        );
        assert_eq!(eval("None").unwrap(), Eval::None);
        assert_eq!(eval("True").unwrap(), Eval::Bool(true));
    }

    #[test]
    fn anything_else_is_an_error_naming_module_and_field() {
        for bad in [
            "__import__('os').system('x')",
            "f'{open(\"x\")}'",
            "f'{NOT_A_VARIABLE}'",
            "1 + 1",
        ] {
            let e = eval(bad).unwrap_err();
            let message = e.to_string();
            assert!(
                message.contains("module m") && message.contains("field f"),
                "{bad}: {message}"
            );
        }
    }
}
