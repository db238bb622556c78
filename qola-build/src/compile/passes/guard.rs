//! A source's device guard: a file whose whole body is
//!
//! ```text
//! <comments, blank lines, #include / #pragma / #define lines>
//! #if !defined(__HIP_DEVICE_COMPILE__) || (EXPR)
//! ...
//! #endif
//! <comments, blank lines>
//! ```
//!
//! (composable_kernel's generated instances: `EXPR` is `defined(__gfx9__) &&
//! !defined(__gfx950__)` for a `_gfx9.cpp` file) compiles, in a device pass, only where `EXPR`
//! holds. `EXPR` is read only when it is made of `defined(NAME)`, `!`, `&&`, `||` and
//! parentheses; anything else, or any other shape of file, is no guard (every architecture
//! compiles the body). Which names are defined is not known here: the headers of the prefix
//! define them (CK's `__gfx9__`), so they are read from a preprocessor run of the prefix (see
//! `prefix`).

use std::collections::BTreeSet;

/// A source's guard: the text before it and the condition of its device body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Guard {
    /// Everything before the `#if` line (includes, comments): what the headers define.
    pub prefix: String,
    /// The condition of the device body.
    pub condition: Expr,
}

/// A condition over defined macro names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expr {
    Defined(String),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Whether the condition holds when exactly `defined` names are defined.
    pub(crate) fn holds(&self, defined: &BTreeSet<String>) -> bool {
        match self {
            Expr::Defined(name) => defined.contains(name),
            Expr::Not(e) => !e.holds(defined),
            Expr::And(a, b) => a.holds(defined) && b.holds(defined),
            Expr::Or(a, b) => a.holds(defined) || b.holds(defined),
        }
    }
}

/// The guard of `text` (a source file), if it has one (see the module docs).
pub(crate) fn read(text: &str) -> Option<Guard> {
    let lines = logical_lines(text);
    let mut in_comment = false;
    let mut start = None;
    for (index, (offset, line)) in lines.iter().enumerate() {
        let code = strip_comments(line, &mut in_comment);
        let code = code.trim();
        if code.is_empty() {
            continue;
        }
        let directive = directive(code)?;
        if let Some(rest) = directive.strip_prefix("if ") {
            start = Some((index, *offset, rest.trim().to_string()));
            break;
        }
        if !["include", "pragma", "define"]
            .iter()
            .any(|d| directive.starts_with(d))
        {
            return None;
        }
    }
    let (first, offset, condition) = start?;
    let condition = device_condition(&condition)?;
    // The `#if` closes at the last directive of the file; nothing but comments follows.
    let mut depth = 0usize;
    let mut closed = false;
    let mut in_comment = false;
    for (_, line) in &lines[first..] {
        let code = strip_comments(line, &mut in_comment);
        let code = code.trim();
        if code.is_empty() {
            continue;
        }
        if closed {
            return None;
        }
        match directive(code) {
            // The guard's own `#else`: the file has code for the other case.
            Some(d) if depth == 1 && d.starts_with("el") => return None,
            Some(d) if d.starts_with("if") => depth += 1,
            Some(d) if d.starts_with("endif") => {
                depth -= 1;
                closed = depth == 0;
            }
            _ => {}
        }
    }
    closed.then(|| Guard {
        prefix: text[..offset].to_string(),
        condition,
    })
}

/// `EXPR` of `!defined(__HIP_DEVICE_COMPILE__) || EXPR`.
fn device_condition(condition: &str) -> Option<Expr> {
    let mut parser = Parser::new(condition)?;
    let expr = parser.or()?;
    if !parser.done() {
        return None;
    }
    let Expr::Or(left, right) = expr else {
        return None;
    };
    let host = Expr::Not(Box::new(Expr::Defined(
        "__HIP_DEVICE_COMPILE__".to_string(),
    )));
    (*left == host).then_some(*right)
}

/// A directive's text after `#` (`None`: not a directive).
fn directive(code: &str) -> Option<&str> {
    code.strip_prefix('#').map(str::trim_start)
}

/// The lines of `text`, with `\`-continued lines joined, each with its byte offset.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut current: Option<(usize, String)> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let (start, mut joined) = current.take().unwrap_or((offset, String::new()));
        match body.strip_suffix('\\') {
            Some(cont) => {
                joined.push_str(cont);
                current = Some((start, joined));
            }
            None => {
                joined.push_str(body);
                out.push((start, joined));
            }
        }
        offset += line.len();
    }
    if let Some(last) = current {
        out.push(last);
    }
    out
}

/// `line` without its comments; `in_comment` carries a `/* */` across lines.
fn strip_comments(line: &str, in_comment: &mut bool) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        if *in_comment {
            match rest.find("*/") {
                Some(end) => {
                    rest = &rest[end + 2..];
                    *in_comment = false;
                }
                None => return out,
            }
        }
        let block = rest.find("/*");
        let line_comment = rest.find("//");
        match (block, line_comment) {
            (Some(b), Some(l)) if l < b => return out + &rest[..l],
            (None, Some(l)) => return out + &rest[..l],
            (Some(b), _) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = &rest[b + 2..];
                *in_comment = true;
            }
            (None, None) => return out + rest,
        }
    }
}

/// A recursive-descent parser of `defined`, `!`, `&&`, `||` and parentheses.
struct Parser {
    tokens: Vec<String>,
    at: usize,
}

impl Parser {
    fn new(text: &str) -> Option<Parser> {
        let mut tokens = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
            } else if c == '&' || c == '|' {
                chars.next();
                if chars.next() != Some(c) {
                    return None;
                }
                tokens.push(format!("{c}{c}"));
            } else if c == '!' || c == '(' || c == ')' {
                chars.next();
                tokens.push(c.to_string());
            } else if c.is_ascii_alphanumeric() || c == '_' {
                let mut word = String::new();
                while let Some(&c) = chars
                    .peek()
                    .filter(|c| c.is_ascii_alphanumeric() || **c == '_')
                {
                    word.push(c);
                    chars.next();
                }
                tokens.push(word);
            } else {
                return None;
            }
        }
        Some(Parser { tokens, at: 0 })
    }

    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn done(&self) -> bool {
        self.at == self.tokens.len()
    }

    fn or(&mut self) -> Option<Expr> {
        let mut left = self.and()?;
        while self.peek() == Some("||") {
            self.next();
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Some(left)
    }

    fn and(&mut self) -> Option<Expr> {
        let mut left = self.unary()?;
        while self.peek() == Some("&&") {
            self.next();
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Some(left)
    }

    fn unary(&mut self) -> Option<Expr> {
        match self.next()?.as_str() {
            "!" => Some(Expr::Not(Box::new(self.unary()?))),
            "(" => {
                let inner = self.or()?;
                (self.next()? == ")").then_some(inner)
            }
            "defined" => {
                let parenthesized = self.peek() == Some("(");
                if parenthesized {
                    self.next();
                }
                let name = self.next()?;
                if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                    return None;
                }
                if parenthesized && self.next()? != ")" {
                    return None;
                }
                Some(Expr::Defined(name))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CK_GFX9: &str = "// SPDX-License-Identifier: MIT\n// auto generated by generate.py\n#include \"ck_tile/ops/fmha/block/variants.hpp\"\n#include \"fmha_fwd.hpp\"\n\n#include <iostream>\n\n#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__) && !defined(__gfx950__))\n\nusing k = int;\n#if 1\n#endif\n}\n\n#endif // !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__) && !defined(__gfx950__))\n";

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn composable_kernel_s_instance_guard_is_read_with_its_prefix() {
        let guard = read(CK_GFX9).expect("a guard");
        assert!(
            guard.prefix.ends_with("#include <iostream>\n\n"),
            "{:?}",
            guard.prefix
        );
        let gfx942 = names(&["__HIP_DEVICE_COMPILE__", "__gfx942__", "__gfx9__"]);
        let gfx950 = names(&["__HIP_DEVICE_COMPILE__", "__gfx950__", "__gfx9__"]);
        assert!(guard.condition.holds(&gfx942));
        assert!(!guard.condition.holds(&gfx950));
    }

    #[test]
    fn anything_but_a_whole_file_guard_of_defined_names_is_no_guard() {
        for text in [
            // Code before the guard.
            &CK_GFX9.replace("#include <iostream>", "int x;"),
            // Something after it.
            &format!("{CK_GFX9}int y;\n"),
            // A condition with a value.
            &CK_GFX9.replace("defined(__gfx9__)", "__gfx9__ > 1"),
            // Not the host-or-device shape.
            &CK_GFX9.replace("!defined(__HIP_DEVICE_COMPILE__) || ", ""),
            // An `#else` of the guard.
            &CK_GFX9.replace("\nusing k = int;", "\n#else\nusing k = int;"),
            // An unclosed #if.
            CK_GFX9.trim_end_matches(|c| c != '\n').trim_end_matches("#endif // !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__) && !defined(__gfx950__))\n"),
            "int main() {}\n",
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    #[test]
    fn comments_continued_lines_and_defined_without_parentheses_are_read() {
        let text = "/* a\n b */ #include \"x.h\"\n#if !defined __HIP_DEVICE_COMPILE__ \\\n || (defined(A) || !defined B)\nint k;\n#endif\n/* end */\n";
        let guard = read(text).expect("a guard");
        assert!(guard.condition.holds(&names(&["A", "B"])));
        assert!(guard.condition.holds(&names(&[])));
        assert!(!guard.condition.holds(&names(&["B"])));
    }
}
