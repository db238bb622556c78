//! git binary patches: `literal N` / `delta N` blocks of base85 lines holding a zlib stream, and
//! git's delta format (copy/insert instructions against the old content).

use std::io::{Read, Write};

use super::model::{BinaryData, ParseError};

const ALPHABET: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

fn digit(c: u8) -> Option<u32> {
    ALPHABET.iter().position(|a| *a == c).map(|p| p as u32)
}

/// Decodes one base85 line (`<length char><5 chars per 4 bytes>`).
fn decode_line(line: &[u8]) -> Option<Vec<u8>> {
    let (&len_char, body) = line.split_first()?;
    let len = match len_char {
        b'A'..=b'Z' => (len_char - b'A' + 1) as usize,
        b'a'..=b'z' => (len_char - b'a' + 27) as usize,
        _ => return None,
    };
    if body.len() != len.div_ceil(4) * 5 {
        return None;
    }
    let mut out = Vec::with_capacity(len.div_ceil(4) * 4);
    for group in body.chunks(5) {
        let mut value: u32 = 0;
        for &c in group {
            value = value.checked_mul(85)?.checked_add(digit(c)?)?;
        }
        out.extend_from_slice(&value.to_be_bytes());
    }
    out.truncate(len);
    Some(out)
}

fn encode_line(chunk: &[u8]) -> String {
    let len = chunk.len();
    let mut line = String::with_capacity(1 + len.div_ceil(4) * 5);
    line.push(if len <= 26 {
        (b'A' + len as u8 - 1) as char
    } else {
        (b'a' + len as u8 - 27) as char
    });
    for group in chunk.chunks(4) {
        let mut word = [0u8; 4];
        word[..group.len()].copy_from_slice(group);
        let mut value = u32::from_be_bytes(word);
        let mut chars = [0u8; 5];
        for c in chars.iter_mut().rev() {
            *c = ALPHABET[(value % 85) as usize];
            value /= 85;
        }
        line.extend(chars.iter().map(|c| *c as char));
    }
    line
}

/// Reads a `literal N` or `delta N` block starting at `start` (ended by an empty line or the end
/// of the file); returns the inflated data and the index after the block.
pub(super) fn decode_binary_block(
    lines: &[&[u8]],
    start: usize,
) -> Result<(BinaryData, usize), ParseError> {
    let fail = |line: usize, message: String| ParseError { line, message };
    let header = lines
        .get(start)
        .map(|l| String::from_utf8_lossy(l).trim_end().to_string())
        .unwrap_or_default();
    let (kind, size) = header
        .split_once(' ')
        .and_then(|(k, n)| Some((k.to_string(), n.parse::<usize>().ok()?)))
        .filter(|(k, _)| k == "literal" || k == "delta")
        .ok_or_else(|| {
            fail(
                start + 1,
                format!("expected `literal N` or `delta N` in a binary patch, found `{header}`"),
            )
        })?;
    let mut compressed = Vec::new();
    let mut i = start + 1;
    while let Some(line) = lines.get(i) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        i += 1;
        if line.is_empty() {
            break;
        }
        let bytes = decode_line(line)
            .ok_or_else(|| fail(i, "bad base85 line in binary patch".to_string()))?;
        compressed.extend_from_slice(&bytes);
    }
    let data = inflate(&compressed).ok_or_else(|| {
        fail(
            start + 1,
            "binary patch data is not a valid zlib stream".to_string(),
        )
    })?;
    if data.len() != size {
        return Err(fail(
            start + 1,
            format!("binary patch says {size} bytes but holds {}", data.len()),
        ));
    }
    Ok((
        if kind == "literal" {
            BinaryData::Literal(data)
        } else {
            BinaryData::Delta(data)
        },
        i,
    ))
}

fn inflate(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(data)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// Encodes `data` as a `literal N` block (without the trailing empty line).
pub(crate) fn encode_literal(data: &[u8]) -> String {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(data)
        .expect("writing to a Vec cannot fail");
    let compressed = encoder.finish().expect("writing to a Vec cannot fail");
    let mut out = format!("literal {}\n", data.len());
    for chunk in compressed.chunks(52) {
        out.push_str(&encode_line(chunk));
        out.push('\n');
    }
    out
}

/// Reads one of git's little-endian base-128 sizes.
fn read_size(delta: &[u8], pos: &mut usize) -> Option<usize> {
    let mut size = 0usize;
    let mut shift = 0;
    loop {
        let byte = *delta.get(*pos)?;
        *pos += 1;
        size |= ((byte & 0x7f) as usize).checked_shl(shift)?;
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(size);
        }
    }
}

/// Applies a git delta to `base`; `None` when the delta does not fit the base.
pub(super) fn apply_delta(base: &[u8], delta: &[u8]) -> Option<Vec<u8>> {
    let mut pos = 0;
    if read_size(delta, &mut pos)? != base.len() {
        return None;
    }
    let result_size = read_size(delta, &mut pos)?;
    let mut out = Vec::with_capacity(result_size);
    while pos < delta.len() {
        let op = delta[pos];
        pos += 1;
        if op & 0x80 != 0 {
            let mut offset = 0usize;
            let mut size = 0usize;
            for bit in 0..4 {
                if op & (1 << bit) != 0 {
                    offset |= (*delta.get(pos)? as usize) << (8 * bit);
                    pos += 1;
                }
            }
            for bit in 0..3 {
                if op & (0x10 << bit) != 0 {
                    size |= (*delta.get(pos)? as usize) << (8 * bit);
                    pos += 1;
                }
            }
            if size == 0 {
                size = 0x10000;
            }
            out.extend_from_slice(base.get(offset..offset.checked_add(size)?)?);
        } else if op != 0 {
            out.extend_from_slice(delta.get(pos..pos + op as usize)?);
            pos += op as usize;
        } else {
            return None;
        }
    }
    (out.len() == result_size).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_round_trips_through_base85_and_zlib() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let block = encode_literal(&data);
        let lines: Vec<&[u8]> = block.as_bytes().split_inclusive(|b| *b == b'\n').collect();
        let (decoded, next) = decode_binary_block(&lines, 0).unwrap();
        assert_eq!(next, lines.len());
        let BinaryData::Literal(out) = decoded else {
            panic!("expected a literal")
        };
        assert_eq!(out, data);
    }

    #[test]
    fn libgit2_literal_decodes() {
        // `literal 7` as libgit2 writes it for b"\0\x01\x03abcd".
        let lines: Vec<&[u8]> = vec![b"literal 7\n", b"Oc${NkWKK*<P5}S|@Bxni\n", b"\n"];
        let (decoded, _) = decode_binary_block(&lines, 0).unwrap();
        let BinaryData::Literal(out) = decoded else {
            panic!("expected a literal")
        };
        assert_eq!(out, b"\0\x01\x03abcd");
    }

    #[test]
    fn delta_copies_and_inserts() {
        let base = b"hello world";
        // base size 11, result size 8: copy offset 0 size 5, insert "!!!".
        let delta = [11, 8, 0x80 | 0x10, 5, 3, b'!', b'!', b'!'];
        assert_eq!(apply_delta(base, &delta).unwrap(), b"hello!!!");
        assert!(apply_delta(b"short", &delta).is_none());
    }
}
