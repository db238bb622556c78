//! Faults placed by phase, never by time: a child process started with `QOLA_TEST_STOP_AT=<step>`
//! stops itself at that step (SIGSTOP, `test-hooks` feature); the test waits until it has
//! stopped, does what the phase needs (an edit, an eviction, another build), then lets it go on.

use std::process::Child;

/// Waits until `child` has stopped itself at its hook (or ended: then `false`).
pub fn wait_until_stopped(child: &Child) -> bool {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `pid` is our own child; WUNTRACED reports a stop without reaping it.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        if got == pid {
            // An ended child is reaped here: its exit status is gone for `wait` (ECHILD).
            return libc::WIFSTOPPED(status);
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Lets a stopped `child` go on.
pub fn resume(child: &Child) {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: sending SIGCONT to our own child.
    unsafe {
        libc::kill(pid, libc::SIGCONT);
    }
}
