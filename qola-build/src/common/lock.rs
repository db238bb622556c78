//! qola's locks: an advisory `flock` on a file, released by the operating system when the
//! process ends (a killed build never leaves one held). The holder writes its process id and
//! command line into the file once it holds it, so a process that must wait says at once what
//! it waits for and who holds it, instead of blocking without a word.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// A held lock; released on drop.
#[derive(Debug)]
pub(crate) struct Held {
    _file: File,
}

fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
}

/// Says who holds the lock now: this process, its id and command line.
fn claim(mut file: File) -> Held {
    let command = std::fs::read("/proc/self/cmdline")
        .map(|bytes| {
            let words: Vec<String> = bytes
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words.join(" ")
        })
        .unwrap_or_default();
    let mut command: String = command.chars().take(300).collect();
    if command.is_empty() {
        command = "(command unknown)".to_string();
    }
    // Best effort: the lock holds whether or not the note could be written.
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "pid {}: {command}", std::process::id()));
    Held { _file: file }
}

/// Who holds the lock at `path`, as its holder wrote it (`pid 1234: qola build ...`).
pub(crate) fn holder(path: &Path) -> String {
    let mut text = String::new();
    let _ = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
    match text.trim() {
        "" => "a process that did not say who it is".to_string(),
        who => who.to_string(),
    }
}

/// Takes the lock at `path` (the file is made if needed). When another process holds it,
/// `waiting` is called once with who holds it (see [`holder`]) before this one waits.
pub(crate) fn acquire(path: &Path, waiting: impl FnOnce(&str)) -> std::io::Result<Held> {
    let file = open(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            waiting(&holder(path));
            file.lock()?;
        }
        Err(TryLockError::Error(e)) => return Err(e),
    }
    Ok(claim(file))
}

/// Takes the lock at `path` when no other process holds it (`None` when one does).
pub(crate) fn try_acquire(path: &Path) -> std::io::Result<Option<Held>> {
    let file = open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(claim(file))),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_is_told_who_holds_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("lock");
        let held = acquire(&path, |_| panic!("free: nobody to wait for")).unwrap();
        assert!(try_acquire(&path).unwrap().is_none());
        let who = holder(&path);
        assert!(
            who.starts_with(&format!("pid {}: ", std::process::id())),
            "{who}"
        );
        drop(held);
        assert!(try_acquire(&path).unwrap().is_some());
    }
}
