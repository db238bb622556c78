//! Publishers a build trusts: each archive signed in minisign's format, checked before anything
//! of it is unpacked.
//!
//! # What is signed
//!
//! The **statement** is the archive's index (`qola-prebuilt.json`, its first member, byte for
//! byte): it names the library key, the module and every file with its size and blake3. A
//! minisign signature (Ed25519 over the BLAKE2b-512 of the statement, minisign's default
//! "prehashed" form) of it is stored beside the archive, `<md_name>/<key>.tar.zst.minisig`,
//! with the trusted comment `qola-prebuilt key=<key> module=<md_name>` (signed too, for people
//! reading it). So a signature binds the key and the module to the digest of the index, and
//! through the index to every file: an archive served under another key or for another module
//! names another statement, and a changed file no longer matches the signed index.
//!
//! # Why minisign
//!
//! Its format is what people already check by hand (Debian's `minisign` package: `minisign -V
//! -p qola.pub -m qola-prebuilt.json -x <key>.tar.zst.minisig`) and sign with in CI; its keys are
//! two short lines; it is plain Ed25519 with a key id, no web of trust, no expiry logic to get
//! wrong. The `minisign` crate (its author's) reads and writes exactly that format.
//!
//! # Checking a fetched archive
//!
//! With any trusted key configured, before the archive is unpacked (see [`Trust::check`]):
//! no signature: *unsigned*; one that cannot be read: *unreadable*; signed by a key not
//! trusted: *signed by another key* (its id); a signature that fails: *does not verify*; a valid
//! signature over an index of another key or module: *signed over another statement*. Each is
//! one warning, and the module is built from source.

use std::path::{Path, PathBuf};

use minisign::{KeyPair, PublicKey, PublicKeyBox, SecretKey, SecretKeyBox, SignatureBox};

use crate::build_script::{Env, EnvError};
use crate::common::precedence::Setting;
use crate::manifest::Manifest;

/// A key id as minisign prints it (16 upper-case hex digits).
fn key_id(keynum: &[u8]) -> String {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&keynum[..8]);
    format!("{:016X}", u64::from_le_bytes(bytes))
}

/// The signing key of a publisher (`--sign-key`, `QOLA_SIGN_KEY`).
pub(crate) struct Signer {
    secret: SecretKey,
    public: PublicKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        write!(f, "Signer({})", self.key_id())
    }
}

impl Signer {
    /// The secret key in `path` (minisign's format, without a password), refused when other
    /// users can read the file. `Err` names the file and the fix.
    pub(crate) fn load(path: &Path) -> Result<Signer, String> {
        let shown = path.display();
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("signing key {shown}: cannot read it: {e}"))?;
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
        if mode & 0o077 != 0 {
            return Err(format!(
                "signing key {shown}: other users can read or write it (mode {:o}): `chmod 600 {shown}`, and replace the key if others may have copied it",
                mode & 0o777
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("signing key {shown}: cannot read it: {e}"))?;
        let not_a_key = |e: minisign::PError| {
            format!(
                "signing key {shown}: not a minisign secret key ({e}): make one with `qola key generate`"
            )
        };
        // A minisign secret key's line starts with its algorithms: `Ed`, the key derivation
        // (`Sc`rypt when it has a password, none when not), `B2`.
        if text.lines().any(|l| l.starts_with("RWRTY0Iy")) {
            return Err(format!(
                "signing key {shown}: it has a password; qola signs without a prompt, so the key must have none (`qola key generate`, or `minisign -G -W`), kept in your CI's secret store"
            ));
        }
        let boxed = SecretKeyBox::from_string(&text).map_err(not_a_key)?;
        let secret = boxed.into_unencrypted_secret_key().map_err(not_a_key)?;
        let public = PublicKey::from_secret_key(&secret).map_err(not_a_key)?;
        Ok(Signer { secret, public })
    }

    /// The key id (what `qola key show` and minisign print).
    pub(crate) fn key_id(&self) -> String {
        key_id(self.public.keynum())
    }

    /// The signature (a `.minisig` file's text) of the index `statement` of `key`'s `md_name`.
    pub(crate) fn sign(
        &self,
        statement: &[u8],
        key: &str,
        md_name: &str,
    ) -> Result<String, String> {
        minisign::sign(
            Some(&self.public),
            &self.secret,
            statement,
            Some(&format!("qola-prebuilt key={key} module={md_name}")),
            Some(&format!("signature from qola key {}", self.key_id())),
        )
        .map(|signature| signature.into_string())
        .map_err(|e| format!("cannot sign: {e}"))
    }
}

/// Why a fetched archive is refused (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No signature beside it.
    Unsigned,
    /// A signature file that is not one.
    Unreadable(String),
    /// Signed by a key not trusted (its id).
    OtherKey(String),
    /// Signed by a trusted key (its id), but the signature fails for this index.
    DoesNotVerify(String),
    /// A valid signature (its key's id) over an index of another key or module.
    OtherStatement {
        /// The signer.
        signer: String,
        /// What the signed index names.
        names: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Unsigned => write!(
                f,
                "unsigned (no .minisig beside it), and this build trusts only signed archives"
            ),
            Refusal::Unreadable(why) => write!(f, "its signature is unreadable ({why})"),
            Refusal::OtherKey(id) => {
                write!(f, "signed by key {id}, which this build does not trust")
            }
            Refusal::DoesNotVerify(id) => write!(
                f,
                "its signature by key {id} does not verify: the index or the signature was changed after signing"
            ),
            Refusal::OtherStatement { signer, names } => write!(
                f,
                "signed by key {signer} over another statement: the signed index is {names}"
            ),
        }
    }
}

/// The public keys a build trusts (`--trust`, `QOLA_TRUSTED_KEYS`, `[qola] trusted_keys`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Trust {
    keys: Vec<PublicKey>,
}

impl Trust {
    /// The keys of `entries`, each a minisign public key (`RW...`) or the path of a `.pub`
    /// file (relative to `base`); `from` says where they were given. `Err` names the entry
    /// and the fix.
    pub(crate) fn parse(entries: &[String], from: &str, base: &Path) -> Result<Trust, String> {
        let mut keys = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            let entry = entry.trim();
            let key = match PublicKey::from_base64(entry) {
                Ok(key) => key,
                Err(as_key) => {
                    let path = base.join(entry);
                    let text = std::fs::read_to_string(&path).map_err(|e| {
                        format!(
                            "{from}, entry {} `{entry}`: neither a minisign public key ({as_key}) nor a readable .pub file ({e}): give the key's `RW...` line or its file (`qola key show` prints it)",
                            i + 1
                        )
                    })?;
                    public_key_text(&text).map_err(|why| {
                        format!(
                            "{from}, entry {} {}: {why}: give the key's `RW...` line or its file (`qola key show` prints it)",
                            i + 1,
                            path.display()
                        )
                    })?
                }
            };
            keys.push(key);
        }
        Ok(Trust { keys })
    }

    /// Whether any key is trusted.
    pub(crate) fn any(&self) -> bool {
        !self.keys.is_empty()
    }

    /// Checks the signature `signature` (the `.minisig` file, if the store has one) of the
    /// index `statement` of `key`'s `md_name` (see the module docs).
    pub(crate) fn check(
        &self,
        signature: Option<&[u8]>,
        statement: &[u8],
        key: &str,
        md_name: &str,
    ) -> Result<(), Refusal> {
        let Some(signature) = signature else {
            return Err(Refusal::Unsigned);
        };
        let text = std::str::from_utf8(signature)
            .map_err(|_| Refusal::Unreadable("not text".to_string()))?;
        let boxed =
            SignatureBox::from_string(text).map_err(|e| Refusal::Unreadable(e.to_string()))?;
        let signer = key_id(boxed.keynum());
        let Some(trusted) = self.keys.iter().find(|k| k.keynum() == boxed.keynum()) else {
            return Err(Refusal::OtherKey(signer));
        };
        minisign::verify(
            trusted,
            &boxed,
            std::io::Cursor::new(statement),
            true,
            false,
            false,
        )
        .map_err(|_| Refusal::DoesNotVerify(signer.clone()))?;
        let index: serde_json::Value = serde_json::from_slice(statement).unwrap_or_default();
        let (signed_key, signed_module) = (index["key"].as_str(), index["md_name"].as_str());
        if signed_key != Some(key) || signed_module != Some(md_name) {
            return Err(Refusal::OtherStatement {
                signer,
                names: format!(
                    "of key {} for module {}, not of key {key} for {md_name}",
                    signed_key.unwrap_or("(none)"),
                    signed_module.unwrap_or("(none)")
                ),
            });
        }
        Ok(())
    }
}

/// The publishers a build trusts (`trust`, the `--trust` values > `QOLA_TRUSTED_KEYS` >
/// `[qola] trusted_keys`, the one precedence), and the key that signs what it publishes
/// (`sign_key`, `--sign-key` > `QOLA_SIGN_KEY`, read only when it `publishes`): each checked
/// before anything is fetched or published. `Err`: the setting and what is wrong with it.
pub(crate) fn trust_and_signer(
    env: &Env,
    manifest: &Manifest,
    trust: &[String],
    sign_key: Option<&Path>,
    publishes: bool,
) -> Result<(Trust, Option<Signer>), (&'static str, String)> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let env_error = |e: EnvError| ("QOLA_TRUSTED_KEYS", e.to_string());
    let given = (!trust.is_empty()).then(|| ("--trust", trust.to_vec(), cwd.clone()));
    let from_env = || {
        Ok::<_, EnvError>(env.var("QOLA_TRUSTED_KEYS")?.map(|list| {
            let keys = list
                .split(|c: char| c == ';' || c == ',' || c.is_whitespace())
                .filter(|k| !k.is_empty())
                .map(String::from)
                .collect();
            ("QOLA_TRUSTED_KEYS", keys, cwd.clone())
        }))
    };
    let in_manifest = || {
        (!manifest.qola.trusted_keys.is_empty()).then(|| {
            let dir = manifest
                .path
                .parent()
                .unwrap_or(Path::new("."))
                .to_path_buf();
            (
                "[qola] trusted_keys",
                manifest.qola.trusted_keys.clone(),
                dir,
            )
        })
    };
    let trust = match Setting::argument(given)
        .environment(from_env)
        .map_err(env_error)?
        .manifest(in_manifest)
        .value()
    {
        Some((from, keys, base)) => {
            Trust::parse(&keys, from, &base).map_err(|why| ("prebuilt trust", why))?
        }
        None => Trust::default(),
    };
    let key = Setting::argument(sign_key.map(Path::to_path_buf))
        .environment_path(|| env.var_os("QOLA_SIGN_KEY").map(PathBuf::from))
        .value();
    let signer = match key {
        Some(path) if publishes => {
            Some(Signer::load(&path).map_err(|why| ("prebuilt signing", why))?)
        }
        _ => None,
    };
    Ok((trust, signer))
}

/// The public key of a minisign `.pub` file's text (its last non-empty line).
fn public_key_text(text: &str) -> Result<PublicKey, String> {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    PublicKey::from_base64(line.trim()).map_err(|e| format!("not a minisign public key file ({e})"))
}

/// A new key pair (`qola key generate`): the secret key written to `secret` (owner-only, never
/// over an existing file), the public one to `public`. Returns the public key's line and id.
pub fn generate_key(secret: &Path, public: &Path) -> Result<(String, String), String> {
    for path in [secret, public] {
        if path.exists() {
            return Err(format!(
                "{} exists: qola never writes over a key; remove it or name another file",
                path.display()
            ));
        }
    }
    let pair =
        KeyPair::generate_unencrypted_keypair().map_err(|e| format!("cannot make a key: {e}"))?;
    let id = key_id(pair.pk.keynum());
    let secret_text = pair
        .sk
        .to_box(Some(&format!(
            "qola signing key {id} (secret: keep it in a secret store)"
        )))
        .map_err(|e| e.to_string())?
        .into_string();
    let public_box: PublicKeyBox = pair.pk.to_box().map_err(|e| e.to_string())?;
    let public_text = public_box.into_string();
    write_new(secret, secret_text.as_bytes(), 0o600)?;
    if let Err(e) = write_new(public, public_text.as_bytes(), 0o644) {
        let _ = std::fs::remove_file(secret);
        return Err(e);
    }
    Ok((pair.pk.to_base64(), id))
}

/// The public key and id of a key file (`qola key show`): a secret key's (refused when others
/// can read it, as for signing) or a public key's.
pub fn show_key(path: &Path) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read it: {e}", path.display()))?;
    if let Ok(public) = public_key_text(&text) {
        return Ok((public.to_base64(), key_id(public.keynum())));
    }
    let signer = Signer::load(path)?;
    Ok((signer.public.to_base64(), signer.key_id()))
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The default files of `qola key generate` in `dir`.
pub fn default_key_files(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("qola-sign.key"), dir.join("qola-sign.pub"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(key: &str, module: &str) -> Vec<u8> {
        format!("{{\"format\":1,\"key\":\"{key}\",\"md_name\":\"{module}\",\"files\":[]}}")
            .into_bytes()
    }

    #[test]
    fn a_signature_verifies_for_its_statement_and_names_every_other_case() {
        let dir = tempfile::tempdir().unwrap();
        let (a_secret, a_public) = default_key_files(&dir.path().join("a"));
        let (b_secret, b_public) = default_key_files(&dir.path().join("b"));
        let (a_line, a_id) = generate_key(&a_secret, &a_public).unwrap();
        generate_key(&b_secret, &b_public).unwrap();
        assert!(
            generate_key(&a_secret, &dir.path().join("x.pub")).is_err(),
            "never over a key"
        );
        let a = Signer::load(&a_secret).unwrap();
        let b = Signer::load(&b_secret).unwrap();
        assert_eq!(a.key_id(), a_id);
        let trust_a = Trust::parse(std::slice::from_ref(&a_line), "--trust", dir.path()).unwrap();
        let trust_a_file =
            Trust::parse(&["a/qola-sign.pub".to_string()], "--trust", dir.path()).unwrap();
        let statement = index("k1", "te_libmha_fwd");
        let signed = a.sign(&statement, "k1", "te_libmha_fwd").unwrap();
        for trust in [&trust_a, &trust_a_file] {
            assert_eq!(
                trust.check(Some(signed.as_bytes()), &statement, "k1", "te_libmha_fwd"),
                Ok(())
            );
        }
        let check = |sig: Option<&[u8]>, statement: &[u8], key: &str, module: &str| {
            trust_a.check(sig, statement, key, module).unwrap_err()
        };
        assert_eq!(
            check(None, &statement, "k1", "te_libmha_fwd"),
            Refusal::Unsigned
        );
        assert!(matches!(
            check(Some(b"garbage"), &statement, "k1", "te_libmha_fwd"),
            Refusal::Unreadable(_)
        ));
        assert!(matches!(
            check(
                Some(&signed.as_bytes()[..40]),
                &statement,
                "k1",
                "te_libmha_fwd"
            ),
            Refusal::Unreadable(_)
        ));
        let by_b = b.sign(&statement, "k1", "te_libmha_fwd").unwrap();
        assert_eq!(
            check(Some(by_b.as_bytes()), &statement, "k1", "te_libmha_fwd"),
            Refusal::OtherKey(b.key_id())
        );
        let changed = index("k1", "te_libmha_bwd");
        assert_eq!(
            check(Some(signed.as_bytes()), &changed, "k1", "te_libmha_fwd"),
            Refusal::DoesNotVerify(a_id.clone())
        );
        assert!(matches!(
            check(Some(signed.as_bytes()), &statement, "k2", "te_libmha_fwd"),
            Refusal::OtherStatement { .. }
        ));
        assert!(matches!(
            check(Some(signed.as_bytes()), &statement, "k1", "te_libmha_bwd"),
            Refusal::OtherStatement { .. }
        ));
    }

    #[test]
    fn a_key_others_can_read_a_malformed_key_or_trust_entry_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let (secret, public) = default_key_files(dir.path());
        generate_key(&secret, &public).unwrap();
        std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let open = Signer::load(&secret).unwrap_err();
        assert!(open.contains("chmod 600"), "{open}");
        let garbage = dir.path().join("garbage.key");
        write_new(&garbage, b"not a key\n", 0o600).unwrap();
        assert!(
            Signer::load(&garbage)
                .unwrap_err()
                .contains("not a minisign secret key")
        );
        // A key `minisign -G` made with a password (a throwaway, made for this test).
        let with_password = dir.path().join("password.key");
        write_new(&with_password, b"untrusted comment: minisign encrypted secret key\nRWRTY0IyrcCyGcjQWbUXPdYdUIT723bRYhrAQ6eubHlDjefzj+QAAAACAAAAAAAAAEAAAAAAJhFvKGd18cWnJX4Vq8Qr9ZGYR+qWCEeT1stslD+Dwwq24mheVRUCHLjGFt54fspx+vSuvrnwsfKWslRRPoCZUeRr8X3z83Pqgj4KQjCnN/ISn7D0xVWJ9Nequbi9cc6Uo/BC5h7A7dk=\n", 0o600).unwrap();
        assert!(
            Signer::load(&with_password)
                .unwrap_err()
                .contains("it has a password")
        );
        let bad =
            Trust::parse(&["RWnope".to_string()], "QOLA_TRUSTED_KEYS", dir.path()).unwrap_err();
        assert!(
            bad.starts_with("QOLA_TRUSTED_KEYS, entry 1 `RWnope`"),
            "{bad}"
        );
    }
}
