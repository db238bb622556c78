//! What a compile that failed on a build server says, as the compiler said it.

/// The compiler's exit status of a compile that failed on a build server, and its message.
/// sccache 0.16 hands a server's exit code back as a raw wait status, so a compiler that exited
/// with 1 reads as "sccache: Compiler killed by signal 1" and the client exits 254 (measured with
/// clang on a loopback farm; the line is on sccache's standard output, the rest on standard
/// error); the number it names is the compiler's code. That line is dropped from the message,
/// which keeps sccache's "Job failed on server …" and the compiler's words.
pub(crate) fn compiler_status(code: Option<i32>, stderr: &str) -> (Option<i32>, String) {
    const FAILED_ON_SERVER: &str = "sccache: Job failed on server";
    const KILLED: &str = "sccache: Compiler killed by signal ";
    let named = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix(KILLED)?.trim().parse::<i32>().ok());
    match named {
        Some(status) if stderr.contains(FAILED_ON_SERVER) => {
            let kept: Vec<&str> = stderr
                .lines()
                .filter(|l| !l.trim().starts_with(KILLED))
                .collect();
            (Some(status), kept.join("\n"))
        }
        _ => (code, stderr.to_string()),
    }
}
