//! The one way tests write a QoLA manifest: `[qola]` with the commit and URL, the keys a test
//! adds, `[build] architectures`, and `[[modules]]` entries (the narrow forward of the real
//! tests has its own constructor).

use std::path::{Path, PathBuf};

/// A manifest's text, built up.
#[derive(Debug, Clone)]
pub struct ManifestText {
    qola: Vec<(String, String)>,
    archs: Vec<String>,
    modules: Vec<String>,
    raw: String,
}

impl ManifestText {
    /// `[qola] aiter_commit` and `aiter_url` (a path or URL).
    pub fn new(commit: &str, url: impl AsRef<Path>) -> ManifestText {
        ManifestText {
            qola: vec![
                ("aiter_commit".to_string(), quoted(commit)),
                (
                    "aiter_url".to_string(),
                    quoted(&url.as_ref().display().to_string()),
                ),
            ],
            archs: Vec::new(),
            modules: Vec::new(),
            raw: String::new(),
        }
    }

    /// A string key of `[qola]` (`namespace`, `patches_dir`).
    pub fn set(mut self, key: &str, value: impl AsRef<Path>) -> ManifestText {
        self.qola.push((
            key.to_string(),
            quoted(&value.as_ref().display().to_string()),
        ));
        self
    }

    /// A key of `[qola]` with its value as TOML text (`rocm_versions`, `["7.2"]`).
    pub fn set_toml(mut self, key: &str, value: &str) -> ManifestText {
        self.qola.push((key.to_string(), value.to_string()));
        self
    }

    /// `[build] architectures`.
    pub fn archs(mut self, archs: &[&str]) -> ManifestText {
        self.archs = archs.iter().map(|a| a.to_string()).collect();
        self
    }

    /// A `[[modules]]` entry: `name`, then `keys` as TOML lines (`mode = "cpp_itfs"\n`).
    pub fn module(mut self, name: &str, keys: &str) -> ManifestText {
        self.modules
            .push(format!("name = {}\n{keys}", quoted(name)));
        self
    }

    /// The narrow forward of the real-tree tests: `libmha_fwd`, group `mha`, cpp_itfs, receipt
    /// 700, without split-KV and batch prefill.
    pub fn narrow_forward(self) -> ManifestText {
        self.module(
            "libmha_fwd",
            "group = \"mha\"\nmode = \"cpp_itfs\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n",
        )
    }

    /// TransformerEngine's GEMM manifest (`transformer_engine/common/aiter_gemm/
    /// qola_manifest.toml`) at `commit` of `url`: namespace `te`, ROCm 7.2 listed, gfx950, the
    /// a4w4 modules `libgemm_a4w4_blockscale` and `libgemm_a4w4_asm` (cpp_itfs).
    pub fn te_gemm(commit: &str, url: impl AsRef<Path>) -> ManifestText {
        ManifestText::new(commit, url)
            .set("namespace", "te")
            .set_toml("rocm_versions", "[\"7.2\"]")
            .archs(&["gfx950"])
            .module("libgemm_a4w4_blockscale", "mode = \"cpp_itfs\"\n")
            .module("libgemm_a4w4_asm", "mode = \"cpp_itfs\"\n")
    }

    /// TOML text of the test's own appended as it is, at the end (right after `[qola]`'s keys
    /// when nothing else was added: more of its keys).
    pub fn raw(mut self, text: &str) -> ManifestText {
        self.raw.push_str(text);
        self
    }

    /// The text.
    pub fn text(&self) -> String {
        let mut text = String::from("[qola]\n");
        for (key, value) in &self.qola {
            text.push_str(&format!("{key} = {value}\n"));
        }
        if !self.archs.is_empty() {
            let archs: Vec<String> = self.archs.iter().map(|a| quoted(a)).collect();
            text.push_str(&format!(
                "\n[build]\narchitectures = [{}]\n",
                archs.join(", ")
            ));
        }
        for module in &self.modules {
            text.push_str(&format!("\n[[modules]]\n{module}"));
        }
        text.push_str(&self.raw);
        text
    }

    /// Writes the text to `path` (parents made); returns the path.
    pub fn write(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        std::fs::create_dir_all(path.parent().expect("a file path has a parent")).unwrap();
        std::fs::write(path, self.text())
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path.to_path_buf()
    }
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_a_qola_manifest_with_what_was_added() {
        let text = ManifestText::new("abc", "/up")
            .set("namespace", "te")
            .archs(&["gfx942"])
            .module("libmha_bwd", "receipt = 700\n")
            .text();
        assert_eq!(
            text,
            "[qola]\naiter_commit = \"abc\"\naiter_url = \"/up\"\nnamespace = \"te\"\n\n[build]\narchitectures = [\"gfx942\"]\n\n[[modules]]\nname = \"libmha_bwd\"\nreceipt = 700\n"
        );
    }
}
