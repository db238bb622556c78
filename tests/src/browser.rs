//! A real browser for the reports qola writes: Debian's Chromium, headless, each run with its
//! own profile directory, no network of its own (the pages are self-contained).

use std::path::Path;
use std::process::Command;

/// Chromium's arguments for a headless run as root in a container, with `profile` as its user
/// data directory.
fn headless(chromium: &Path, profile: &Path) -> Command {
    let mut command = Command::new(chromium);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--hide-scrollbars",
            // Enough time for the page's own script: it draws everything at load.
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// The DOM of `page` after its scripts ran (`--dump-dom`).
pub fn rendered_dom(chromium: &Path, page: &Path, profile: &Path) -> String {
    let out = headless(chromium, profile)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", chromium.display()));
    assert!(
        out.status.success(),
        "chromium --dump-dom {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A screenshot of `page` (`width` × `height` pixels) written to `png`.
pub fn screenshot(chromium: &Path, page: &Path, profile: &Path, png: &Path, size: (u32, u32)) {
    let out = headless(chromium, profile)
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", chromium.display()));
    assert!(
        out.status.success() && png.is_file(),
        "chromium --screenshot {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
