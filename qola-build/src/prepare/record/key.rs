//! The preparation key: everything that decides what the prepared tree must be. Two builds with
//! the same key need the same tree; when the key changes, the reasons name each component that
//! changed.

use serde::{Deserialize, Serialize};

use crate::prepare::patch::Series;
use crate::prepare::report::Why;

/// Version of the key and stamp layout; bumping it makes every stamp count as absent.
pub(crate) const SCHEMA: u32 = 1;

/// One patch of the series as the key sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PatchId {
    /// File name.
    pub name: String,
    /// blake3 of the bytes.
    pub blake3: String,
}

/// The components of the key, recorded in the stamp so a reason can name what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KeyComponents {
    /// [`SCHEMA`].
    pub schema: u32,
    /// qola-build's version (a new qola may prepare differently).
    pub qola_version: String,
    /// The normalized `aiter_url`.
    pub url: String,
    /// The resolved commit (full SHA).
    pub commit: String,
    /// The series, in order.
    pub patches: Vec<PatchId>,
}

impl KeyComponents {
    /// The components for a resolved commit and a series.
    pub(crate) fn new(url: &str, commit: &str, series: &Series) -> KeyComponents {
        KeyComponents {
            schema: SCHEMA,
            qola_version: env!("CARGO_PKG_VERSION").to_string(),
            url: url.to_string(),
            commit: commit.to_string(),
            patches: series
                .patches
                .iter()
                .map(|p| PatchId {
                    name: p.name.clone(),
                    blake3: blake3::hash(&p.bytes).to_hex().to_string(),
                })
                .collect(),
        }
    }

    /// The key: blake3 over the canonical JSON of the components.
    pub(crate) fn key(&self) -> String {
        let json = serde_json::to_vec(self).expect("key components always serialize");
        blake3::hash(&json).to_hex().to_string()
    }

    /// What changed from `old` to `self`, one cause per change.
    pub(crate) fn changes_from(&self, old: &KeyComponents) -> Vec<Why> {
        let mut whys = Vec::new();
        if old.qola_version != self.qola_version || old.schema != self.schema {
            whys.push(Why::QolaVersion {
                old: old.qola_version.clone(),
                new: self.qola_version.clone(),
            });
        }
        if old.url != self.url {
            whys.push(Why::Url {
                old: old.url.clone(),
                new: self.url.clone(),
            });
        }
        if old.commit != self.commit {
            whys.push(Why::Commit {
                old: old.commit.clone(),
                new: self.commit.clone(),
            });
        }
        whys.extend(patch_changes(&old.patches, &self.patches));
        whys
    }
}

/// Patches added, removed, changed, renamed or reordered between two series.
fn patch_changes(old: &[PatchId], new: &[PatchId]) -> Vec<Why> {
    let mut whys = Vec::new();
    let find = |list: &[PatchId], name: &str| list.iter().position(|p| p.name == name);
    for p in new {
        match find(old, &p.name) {
            Some(i) if old[i].blake3 != p.blake3 => whys.push(Why::PatchChanged(p.name.clone())),
            Some(_) => {}
            None => match old
                .iter()
                .find(|o| o.blake3 == p.blake3 && find(new, &o.name).is_none())
            {
                Some(o) => whys.push(Why::PatchRenamed {
                    old: o.name.clone(),
                    new: p.name.clone(),
                }),
                None => whys.push(Why::PatchAdded(p.name.clone())),
            },
        }
    }
    for o in old {
        let renamed = new
            .iter()
            .any(|p| p.blake3 == o.blake3 && find(old, &p.name).is_none());
        if find(new, &o.name).is_none() && !renamed {
            whys.push(Why::PatchRemoved(o.name.clone()));
        }
    }
    let order = |list: &[PatchId]| list.iter().map(|p| p.blake3.clone()).collect::<Vec<_>>();
    if order(old) != order(new) && whys.iter().all(|w| matches!(w, Why::PatchRenamed { .. })) {
        whys.push(Why::SeriesReordered);
    }
    whys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[(&str, &str)]) -> Vec<PatchId> {
        list.iter()
            .map(|(n, h)| PatchId {
                name: n.to_string(),
                blake3: h.to_string(),
            })
            .collect()
    }

    fn kinds(old: &[(&str, &str)], new: &[(&str, &str)]) -> Vec<ReasonKind> {
        patch_changes(&ids(old), &ids(new))
            .into_iter()
            .map(|w| w.reason().kind)
            .collect()
    }

    use crate::prepare::report::ReasonKind;

    #[test]
    fn each_patch_change_has_its_reason() {
        use ReasonKind::*;
        let base = [("1.patch", "a"), ("2.patch", "b")];
        assert_eq!(kinds(&base, &base), vec![]);
        assert_eq!(kinds(&base, &[("1.patch", "a")]), vec![PatchRemoved]);
        assert_eq!(
            kinds(
                &base,
                &[("1.patch", "a"), ("2.patch", "b"), ("3.patch", "c")]
            ),
            vec![PatchAdded]
        );
        assert_eq!(
            kinds(&base, &[("1.patch", "a"), ("2.patch", "B")]),
            vec![PatchChanged]
        );
        assert_eq!(
            kinds(&base, &[("0.patch", "b"), ("1.patch", "a")]),
            vec![PatchRenamed, PatchRenamed]
        );
    }
}
